/**
 * What each node type does and what each of its settings means, in words, for the node-type
 * reference (GET /node-types, docs/nodes.md, the OpenAPI steps). The catalogue entries say what a
 * node is as data; this file says it for people. `defaults` is the value a step uses when the
 * setting is absent, where that is one constant (test/node-types.test.ts checks each against its
 * setting's schema, and that every setting has words). The model steps' shared settings
 * (`provider`, `model`, `modelInput`) and `apiInputKey` carry their words in their schemas.
 */
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { defaultMaxTokens, defaultSamplingSteps, draftMaxTokens } from './run-modes.ts';

export interface NodeWords {
  /** What a step of this type does, in one or two sentences. */
  does: string;
  /** Each of its own settings' meaning. */
  settings?: Readonly<Record<string, string>>;
  /** A setting's value when absent, where it is one constant. */
  defaults?: Readonly<Record<string, unknown>>;
}

const stageWords: NodeWords = {
  does: 'Groups steps in the editor. Passes on what it receives: null for nothing, the value for one input, a list for several.',
  settings: { description: 'Free text shown in the editor; the run ignores it.' },
};

const viewerTitle = { title: 'A title shown in the editor; the run ignores it.' };

const repositoryDelivery = (host: string): NodeWords => ({
  does: `Commits the files it receives to a repository on ${host}, through the team's connection to it, and answers a receipt.`,
  settings: {
    repository: 'The repository, as the host names it (e.g. `team/assets`).',
    branch: "The branch to commit to; by default the repository's default branch.",
    path: 'The folder the files are written under; by default the repository root.',
    commitMessage: 'The commit message; by default `Add <n> file(s) from workflow run <jobId>`.',
  },
});

const modelImageSize = 'Output side in pixels; by default 1024 on a real provider, 256 on the offline sandbox.';
const samplingSteps = 'Sampling steps; `draft` mode runs a third of them (at least 1).';
const answerTokens = `Longest answer in tokens; \`draft\` mode caps it at ${draftMaxTokens}.`;

export const nodeWords: Readonly<Record<NodeType, NodeWords>> = {
  InputStage: stageWords,
  ProcessingStage: stageWords,
  ExportStage: stageWords,

  Prompt: {
    does: 'Outputs a prompt text. Saved prompts are not readable from a run: put the text in `config.text`.',
    settings: {
      promptId: "The saved prompt's id in the app (not read by a run).",
      text: 'The prompt text it outputs.',
    },
  },
  Knowledgebase: {
    does: "Asks the team's knowledge base connection for the documents that match its query input, and outputs them as JSON.",
    settings: { knowledgebaseId: 'Which knowledge base to search.', topK: 'How many documents to return.' },
    defaults: { topK: 5 },
  },
  Service: {
    does: "POSTs its request input as JSON to an operation of the team's service connection and outputs the JSON answer.",
    settings: {
      serviceId: 'The service, appended to the connection’s URL.',
      operation: 'The operation, appended after it.',
    },
  },
  CodeHostA: {
    does: "Reads one file from a repository through the team's code host connection and outputs it.",
    settings: {
      repository: 'The repository (required when the step runs).',
      ref: 'The branch, tag or commit.',
      path: 'The file path in the repository (required when the step runs).',
    },
    defaults: { ref: 'HEAD' },
  },
  CloudStorage: {
    does: "Reads one object from the team's cloud storage connection and outputs it as a file.",
    settings: {
      bucket: 'The bucket (required when the step runs).',
      key: 'The object key (required when the step runs).',
    },
  },

  TextEntry: {
    does: "Outputs a text: the run's input named by `apiInputKey` when the run gives one, else `config.text`.",
    settings: { text: 'The text it outputs when the run gives none.' },
    defaults: { text: '' },
  },
  FileUploader: {
    does: "Outputs a file: the run's file input named by `apiInputKey` (a `fileId` from POST /files, or an https URL), else the team library's file `config.fileId`.",
    settings: {
      fileId: "A file of the team's library, used when the run gives none.",
      fileName: 'The file name shown in the editor.',
      mimeType: 'The content type shown in the editor.',
    },
  },
  JsonLoader: {
    does: "Outputs a JSON value: the run's JSON file named by `apiInputKey`, else `config.data` (a string is parsed as JSON), else the JSON answer of a GET to `config.url`.",
    settings: {
      data: 'The JSON value it outputs.',
      url: 'An https URL whose JSON answer it outputs when `data` is absent.',
    },
  },
  ImageLoader: {
    does: "Outputs an image: the run's image named by `apiInputKey` (PNG, JPEG, WebP or GIF), else the image at `config.url`.",
    settings: { url: 'An https URL of the image, used when the run gives none.' },
  },
  WebhookListener: {
    does: 'Outputs the payload of a webhook the app received. A run started through the API has none: its payload is null.',
    settings: { path: 'The path the app listens on (not read by a run).' },
  },
  ObjectBucketWatcher: {
    does: "Reads the object under a prefix of a bucket of the team's object storage connection and outputs it as a file.",
    settings: { bucket: 'The bucket (required when the step runs).', prefix: 'The key prefix.' },
    defaults: { prefix: '' },
  },
  ShaderSnippet: {
    does: 'Outputs shader source code as text.',
    settings: { code: 'The shader source.', language: 'The shading language (for the editor).' },
    defaults: { code: '' },
  },
  RigImporter: {
    does: "Outputs a rigged mesh: the run's file named by `apiInputKey` (glTF, FBX or OBJ), else the GLB at `config.url`.",
    settings: {
      url: 'An https URL of the mesh, used when the run gives none.',
      format: 'The format expected at `url`.',
    },
    defaults: { format: 'glb' },
  },
  TextureManifest: {
    does: 'Outputs a JSON manifest `{ textures: [{ name, file }] }` pairing the names in `config.textures` with the images it receives, in order.',
    settings: { textures: 'Texture names, in the order of the images; a missing name is `texture-<n>`.' },
  },

  PromptBuilder: {
    does: "Builds a prompt text from its inputs. `{{0}}`, `{{1}}`, ... in the template are replaced by the connected values in order; without a template the values are joined by blank lines. The run's text input named by `apiInputKey` replaces the template.",
    settings: { template: 'The template, e.g. `Write about {{0}}`.' },
  },
  JsonExtractor: {
    does: 'Reads one value out of its JSON input by a JSONPath and outputs it.',
    settings: { path: 'A JSONPath such as `$.items[0].name`.' },
    defaults: { path: '$' },
  },
  VariableMapper: {
    does: 'Outputs a JSON object whose names are `config.mapping` keys and whose values are read from its inputs by JSONPath; without a mapping, its input as it is.',
    settings: { mapping: 'Variable name → JSONPath into the inputs (one input is the root; several are a list).' },
  },
  MathOperator: {
    does: 'Evaluates an arithmetic expression over its number inputs, named `a`, `b`, ... in order, and outputs the number.',
    settings: { expression: 'The expression, e.g. `(a + b) / 2` (up to 1,000 characters).' },
  },
  ConditionalSwitch: {
    does: 'Compares its input with `config.value` and passes it on through `true` or `false`; the steps fed by the branch not taken are skipped.',
    settings: {
      operator:
        'How to compare: `equals`, `notEquals`, `greaterThan`, `lessThan`, `contains`, or `truthy` and `empty` (which ignore `value`).',
      value: 'The value compared with.',
    },
  },
  BatchSplitter: {
    does: 'Takes a JSON list and outputs its first `maxItems` items as a list.',
    settings: { maxItems: 'Most items kept; by default all.' },
  },
  ImageCropper: {
    does: 'Crops a PNG image (each one of a list) to a rectangle.',
    settings: {
      x: 'Left edge in pixels.',
      y: 'Top edge in pixels.',
      width: 'Width in pixels; by default the rest of the image.',
      height: 'Height in pixels; by default the rest of the image.',
    },
    defaults: { x: 0, y: 0 },
  },
  MeshDecimator: {
    does: 'Reduces a GLB mesh to a share of its triangles (a geometric algorithm, not a model) and outputs a GLB.',
    settings: { ratio: 'Share of triangles kept, above 0 and at most 1.' },
    defaults: { ratio: 0.5 },
  },
  CustomApiCall: {
    does: 'Calls an http(s) URL with its JSON input as the body (file values become links) and outputs the JSON (or text) answer. Redirects are not followed; a 3xx or 4xx/5xx fails the step.',
    settings: {
      url: 'The URL to call (public addresses only).',
      method: 'The HTTP method.',
      headers: 'Request headers.',
      timeoutMs: 'Deadline of the call in milliseconds (at most 20,000).',
    },
    defaults: { method: 'GET', timeoutMs: 10_000 },
  },
  PythonSandbox: {
    does: 'Runs Python code (Pyodide, no network, no files) with its inputs as the list `inputs`, and outputs the JSON value the code assigns to `result`.',
    settings: {
      code: 'The Python code, e.g. `result = sum(inputs)`.',
      timeoutMs: 'Deadline of the code in milliseconds.',
    },
    defaults: { timeoutMs: 10_000 },
  },
  IterationGate: {
    does: 'Collects the items of a batch (or several branches) back into one JSON list, at most `maxItems` long.',
    settings: { maxItems: 'Most items kept; by default all.' },
  },

  ImageGen: {
    does: 'Generates images from a text prompt (and an optional reference image).',
    settings: {
      width: modelImageSize,
      height: modelImageSize,
      steps: samplingSteps,
      seed: 'Random seed, for repeatable images.',
      variations: 'How many images to make; each is charged. `draft` mode makes one.',
      negativePrompt: 'What the image should not show.',
    },
    defaults: { steps: defaultSamplingSteps, variations: 1 },
  },
  AudioGen: {
    does: 'Generates audio (WAV) from a text prompt.',
    settings: { durationSeconds: 'Length in seconds.', seed: 'Random seed.' },
    defaults: { durationSeconds: 4 },
  },
  '3DTransform': {
    does: 'Makes a 3D mesh from an image (and an optional prompt).',
    settings: { format: 'The mesh format of the output.', seed: 'Random seed.' },
    defaults: { format: 'glb' },
  },
  LlmWorker: {
    does: 'Answers a prompt with a language model; connected `context` values are added to the prompt.',
    settings: {
      system: 'The system prompt.',
      maxTokens: answerTokens,
      temperature: 'Sampling temperature.',
    },
    defaults: { maxTokens: defaultMaxTokens },
  },
  DiffusionWorker: {
    does: 'Generates or transforms an image with a diffusion model from a prompt and an optional source image.',
    settings: {
      width: modelImageSize,
      height: modelImageSize,
      steps: samplingSteps,
      seed: 'Random seed.',
      guidance: 'How closely to follow the prompt.',
      strength: 'How much of the source image to change (0 keeps it, 1 replaces it).',
    },
    defaults: { steps: defaultSamplingSteps },
  },
  ControlNetFilter: {
    does: 'Makes an image guided by the structure of its input image (edges, depth, pose or scribble).',
    settings: { mode: 'Which structure guides the image.', strength: 'How strongly the structure guides it.' },
    defaults: { mode: 'canny' },
  },
  VisionInterrogator: {
    does: 'Answers a question about an image (by default: describe it) with a vision model.',
    settings: { detail: 'How closely the model looks at the image.', maxTokens: answerTokens },
    defaults: { maxTokens: defaultMaxTokens },
  },
  DepthEstimator: { does: 'Estimates a depth map of an image and outputs it as an image.' },
  PbrSynthesizer: {
    does: 'Makes PBR material maps (albedo, normal, roughness) from an image.',
    settings: { resolution: 'Side of each map in pixels.' },
  },
  TwoDToThreeD: {
    does: 'Makes a 3D mesh from one image.',
    settings: { format: 'The mesh format of the output.', seed: 'Random seed.' },
    defaults: { format: 'glb' },
  },
  AutoRigger: {
    does: 'Adds a skeleton to a mesh and outputs the rigged mesh.',
    settings: { skeleton: 'The kind of skeleton.' },
    defaults: { skeleton: 'humanoid' },
  },
  Upscaler: {
    does: 'Enlarges an image by 2× or 4×.',
    settings: { scale: 'The factor.' },
    defaults: { scale: 2 },
  },
  BackgroundRemover: { does: "Removes an image's background, leaving the subject on transparency." },
  Embedder: {
    does: 'Turns a text (up to 8,192 tokens) into an embedding vector.',
    settings: { dimensions: "Length of the vector; by default the model's." },
  },

  TextConsole: { does: 'Shows its text in the app and passes it on.', settings: viewerTitle },
  ImageGallery: {
    does: 'Shows its images in the app and passes them on as a list.',
    settings: { ...viewerTitle, columns: 'Columns of the gallery in the editor.' },
  },
  AudioPlayer: {
    does: 'Shows an audio player in the app and passes the audio on.',
    settings: { ...viewerTitle, loop: 'Whether the player loops (in the editor).' },
  },
  JsonInspector: { does: 'Shows its JSON in the app and passes it on.', settings: viewerTitle },
  ThreeDStudioViewer: {
    does: 'Shows a mesh (with optional textures) in the app and passes the mesh on.',
    settings: { ...viewerTitle, environment: 'The lighting environment in the editor.' },
  },
  ShaderPlayback: {
    does: 'Plays a shader (with optional textures) in the app and passes its source on.',
    settings: { ...viewerTitle, durationSeconds: 'Playback length in the editor, in seconds.' },
  },

  ApiPostAction: {
    does: 'POSTs its input as JSON (one value, or a list of several; files become links) to a URL and outputs a receipt `{ target, status, count }`.',
    settings: { url: 'The URL to POST to (public addresses only).', headers: 'Request headers.' },
  },
  ObjectUploader: {
    does: "Uploads the files it receives to a bucket of the team's object storage connection and outputs a receipt.",
    settings: { bucket: 'The bucket (required when the step runs).', prefix: 'Prefix of the keys written.' },
    defaults: { prefix: '' },
  },
  ChatNotifier: {
    does: "Sends a message built from its inputs to the team's chat connection and outputs a receipt.",
    settings: {
      channel: "The channel; by default the connection's.",
      template: 'A template with `{{0}}`, `{{1}}`, ... for the inputs; by default the inputs joined by blank lines.',
    },
  },
  CodeHostADelivery: repositoryDelivery('code host A'),
  CodeHostBDelivery: repositoryDelivery('code host B'),
  VcsCDelivery: repositoryDelivery('version control host C'),
  EngineDelivery: {
    does: "Sends the files it receives (as links) to a project of the team's game engine connection and outputs a receipt.",
    settings: {
      project: 'The project (required when the step runs).',
      assetPath: 'Where the assets go in the project.',
    },
  },
};
