import type { Deps } from '../../deps.ts';
import { fileUrlSeconds } from '../../domain/file-link-lifetime.ts';
import type { Canvas, CanvasNode } from '../../nodes/catalogue/canvas.ts';
import { getNodeSpec } from '../../nodes/catalogue/index.ts';
import type { NodeSpec } from '../../nodes/catalogue/node-spec.ts';
import type { ModelUse, StepContext, StoredFile } from '../../nodes/executors/types.ts';
import { getConnections, resolveConnection } from '../../store/connections.ts';
import { presignTeamFile, putRunFile, readTeamFile } from '../../store/files.ts';
import type { RunItem } from '../../store/items/runs.ts';
import type { ConnectionRef } from '../../store/items/tenancy.ts';

/** What a node executor (or a job's outcome) is handed: the step, its inputs, and the run's files and keys. */
export const stepContext = (
  deps: Deps,
  run: RunItem,
  node: CanvasNode,
  spec: NodeSpec,
  parts: { inputs: Record<string, unknown[]>; runInput: string | undefined; runFile?: StoredFile; timeoutMs: number },
) => {
  const { teamId, jobId } = run;
  let connections: Record<string, ConnectionRef> | undefined;
  const context: StepContext = {
    jobId,
    teamId,
    node,
    spec,
    mode: run.mode,
    inputs: parts.inputs,
    runInput: parts.runInput,
    ...(parts.runFile && { runFile: parts.runFile }),
    storeFile: (file) => putRunFile(deps, { teamId, jobId, nodeId: node.id }, file),
    readFile: (file) => readTeamFile(deps, teamId, file),
    fileUrl: (file) => presignTeamFile(deps, teamId, file.key, fileUrlSeconds, file.contentType),
    connection: async (key) => {
      connections ??= await getConnections(deps, teamId);
      return resolveConnection(deps.secrets, key, connections[key]);
    },
    signal: AbortSignal.timeout(parts.timeoutMs),
  };
  return context;
};

/** The canvas node a step message names, and its spec; a message for a node not in the canvas is a bug. */
export const nodeOf = (canvas: Canvas, nodeId: string) => {
  const node = canvas.nodes.find((n) => n.id === nodeId);
  const spec = node ? getNodeSpec(node.type) : undefined;
  if (!node || !spec) throw new Error(`Node ${nodeId} is not in the canvas`);
  return { node, spec };
};

/** The provider and model a model step will call (its config's, else its catalogue default): none for another step. */
export const plannedModel = (node: { config: Record<string, unknown> }, spec: { model: ModelUse | null }) => {
  if (!spec.model) return undefined;
  const { provider, model } = node.config;
  return {
    provider: typeof provider === 'string' ? provider : spec.model.provider,
    model: typeof model === 'string' ? model : spec.model.model,
  };
};
