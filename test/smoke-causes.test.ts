/**
 * The smoke run's judgements, without I/O: a failed step's error text to its cause, a Bedrock
 * lifecycle status to pass or fail, an inference profile to its foundation model, and its list of
 * model node types against the catalogue's.
 */
import { describe, expect, it } from 'vitest';
import { ForbiddenError, UnauthorizedError, WaitTimeoutError } from '../packages/client/src/errors.ts';
import { causeOfError } from '../packages/client/src/smoke/causes.ts';
import {
  classifyStepError,
  foundationModelId,
  hopCount,
  hopSteps,
  judgeLifecycle,
  smokeModelTypes,
} from '../packages/client/src/smoke/index.ts';
import { modelNodeTypes } from '../platform/model-defaults.ts';

describe('classifyStepError', () => {
  it.each([
    [
      'LlmWorker: AccessDeniedException: Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe)',
      'access not granted',
    ],
    ["LlmWorker: You don't have access to the model with the specified model ID.", 'access not granted'],
    [
      'LlmWorker: Model use case details have not been submitted for this account. Fill out the Anthropic use case details form',
      'access not granted',
    ],
    ['ImageGen: ValidationException: The provided model identifier is invalid.', 'model not served in region'],
    [
      "LlmWorker: Invocation of model ID anthropic.claude-3-5-haiku-20241022-v1:0 with on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference profile that contains this model.",
      'model not served in region',
    ],
    ['LlmWorker: ResourceNotFoundException: This model version has reached the end of its life.', 'lifecycle'],
    [
      'LlmWorker: Access denied. This Model is marked by provider as Legacy and you have not been actively using the model in the last 30 days.',
      'lifecycle',
    ],
    ['TwoDToThreeD: timed out at fal', 'timeout'],
    ['PythonSandbox: raised ZeroDivisionError: division by zero', 'step failed'],
  ])('%s → %s', (text, cause) => {
    expect(classifyStepError(text)).toBe(cause);
  });
});

describe('causeOfError', () => {
  it('names the key refused, the scope lacking, and a deadline', () => {
    expect(causeOfError(new UnauthorizedError(401, { error: 'Unauthorized' }))).toBe('key refused');
    expect(causeOfError(new ForbiddenError(403, { error: 'Forbidden' }))).toBe('key lacks a scope');
    expect(causeOfError(new WaitTimeoutError('j', 1, undefined))).toBe('timeout');
    expect(causeOfError(new TypeError('fetch failed'))).toBe('unreachable');
  });
});

describe('judgeLifecycle', () => {
  it('passes ACTIVE and fails LEGACY, an unknown status and none', () => {
    expect(judgeLifecycle('ACTIVE').ok).toBe(true);
    expect(judgeLifecycle('LEGACY')).toMatchObject({ ok: false, detail: expect.stringMatching(/^LEGACY/) });
    expect(judgeLifecycle('RETIRED').ok).toBe(false);
    expect(judgeLifecycle(undefined).ok).toBe(false);
  });
});

describe('foundationModelId', () => {
  it('takes the geography off an inference profile id, and leaves a model id as it is', () => {
    expect(foundationModelId('us.anthropic.claude-3-5-haiku-20241022-v1:0')).toBe(
      'anthropic.claude-3-5-haiku-20241022-v1:0',
    );
    expect(foundationModelId('global.anthropic.claude-haiku-4-5-20251001-v1:0')).toBe(
      'anthropic.claude-haiku-4-5-20251001-v1:0',
    );
    expect(foundationModelId('amazon.titan-embed-text-v2:0')).toBe('amazon.titan-embed-text-v2:0');
  });
});

describe('the smoke workflows', () => {
  it('cover every model node type of the catalogue', () => {
    expect([...smokeModelTypes].sort()).toEqual([...modelNodeTypes].sort());
  });

  it('make a line of more than 16 queued steps: none is the only successor of the step before it', () => {
    const steps = hopSteps();
    expect(hopCount).toBeGreaterThan(16);
    for (const [i, step] of steps.slice(2).entries())
      expect((step as { inputs?: unknown }).inputs).toEqual([`hop${i + 1}`, 'seed']);
  });
});
