/**
 * A workflow's words that modules other than the workflow contract read (the node catalogue, the
 * graph validation, the provider webhook, the stored workflow): the node types, the rule of a step's
 * key and a workflow's statuses. Apart from
 * schemas/workflows.ts, so reading one does not build every schema of the workflow contract.
 */
import * as v from 'valibot';

/** The node types of spec section 2.2, in spec order and spelling (how many: test/openapi.test.ts and docs/api.md). */
export const nodeTypes = [
  'InputStage',
  'ProcessingStage',
  'ExportStage',
  'Prompt',
  'Knowledgebase',
  'Service',
  'CodeHostA',
  'CloudStorage',
  'ImageGen',
  'AudioGen',
  '3DTransform',
  'TextEntry',
  'FileUploader',
  'JsonLoader',
  'ImageLoader',
  'WebhookListener',
  'ObjectBucketWatcher',
  'ShaderSnippet',
  'RigImporter',
  'TextureManifest',
  'PromptBuilder',
  'JsonExtractor',
  'VariableMapper',
  'MathOperator',
  'ConditionalSwitch',
  'BatchSplitter',
  'ImageCropper',
  'MeshDecimator',
  'CustomApiCall',
  'PythonSandbox',
  'IterationGate',
  'LlmWorker',
  'DiffusionWorker',
  'ControlNetFilter',
  'VisionInterrogator',
  'DepthEstimator',
  'PbrSynthesizer',
  'TwoDToThreeD',
  'AutoRigger',
  'Upscaler',
  'BackgroundRemover',
  'Embedder',
  'TextConsole',
  'ImageGallery',
  'AudioPlayer',
  'JsonInspector',
  'ApiPostAction',
  'ObjectUploader',
  'ChatNotifier',
  'CodeHostADelivery',
  'CodeHostBDelivery',
  'VcsCDelivery',
  'EngineDelivery',
  'ThreeDStudioViewer',
  'ShaderPlayback',
] as const;
export const NodeTypeSchema = v.picklist(nodeTypes);
export type NodeType = v.InferOutput<typeof NodeTypeSchema>;

/**
 * What a step key and a `config.apiInputKey` may be (our design): letters, digits, `_` and `-`, 1 to
 * 64 characters, and not `__proto__`, `constructor` or `prototype`. Keys become object keys, SQS
 * message bodies and DynamoDB attribute names, and those three would wedge a run (a 500 at every
 * start). The graph validation applies it (the 422 `invalid_key`, or `invalid_config` for an
 * apiInputKey); the request schema only shows it in the OpenAPI document, so a key outside it is
 * the contract's 422 with every other problem, not a 400.
 */
export const stepKeyPattern = /^(?!(?:__proto__|constructor|prototype)$)[A-Za-z0-9_-]{1,64}$/;
export const stepKeyRule = 'letters, digits, _ and -, 1 to 64 characters; not __proto__, constructor or prototype';

/** A workflow's statuses (POST /workflows/{id}/status), as the stored workflow keeps them. */
export const workflowStatuses = ['draft', 'active', 'archived'] as const;
export const WorkflowStatusSchema = v.picklist(workflowStatuses);
export type WorkflowStatus = v.InferOutput<typeof WorkflowStatusSchema>;
