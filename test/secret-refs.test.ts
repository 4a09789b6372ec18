/**
 * Secret references and the secret store's rules, without AWS: the references a stage accepts, and
 * the store's cache and errors over stand-in clients (the integration test, test/secrets.int.test.ts,
 * drives the real SDK clients against an emulator).
 */
import { describe, expect, it } from 'vitest';
import {
  connectionRefProblem,
  type SecretPolicy,
  SecretUnavailableError,
  secretPolicyFromEnv,
} from '../functions/nodes/providers/secret-refs.ts';
import { createSecretStore, secretCacheMs } from '../functions/store/secrets.ts';
import { connectionSecretPrefixOf, parseProviderSecret, parseSecretRef } from '../platform/secret-refs.ts';

const local: SecretPolicy = { deployed: false, connectionPrefix: undefined };
const prod: SecretPolicy = { deployed: true, connectionPrefix: 'workflow-run-api/prod/connections/' };

describe('secret references', () => {
  it('parses env:, secretsmanager: and ssm: references, and nothing else', () => {
    expect(parseSecretRef('env:STUDIO_X_KEY')).toEqual({ store: 'env', name: 'STUDIO_X_KEY' });
    expect(parseSecretRef('secretsmanager:a/b-c')).toEqual({ store: 'secretsmanager', name: 'a/b-c' });
    expect(parseSecretRef('ssm:/a/b')).toEqual({ store: 'ssm', name: '/a/b' });
    for (const bad of ['sk-live-1', 'env:', 'env:1X', 'ssm:a/b', 'ssm:/a/../b', 'vault:x', 'secretsmanager:a b']) {
      expect(parseSecretRef(bad), bad).toBeUndefined();
    }
    // A stage provider's secret: a bare name or ARN means Secrets Manager; env: is never one.
    expect(parseProviderSecret('workflow-run-api/prod/providers/x')).toEqual({
      store: 'secretsmanager',
      name: 'workflow-run-api/prod/providers/x',
    });
    expect(parseProviderSecret('ssm:/p')).toEqual({ store: 'ssm', name: '/p' });
    expect(parseProviderSecret('env:X')).toBeUndefined();
  });

  it('reads the policy from SERVICE_STAGE and CONNECTION_SECRET_PREFIX', () => {
    expect(secretPolicyFromEnv({})).toEqual(local);
    expect(secretPolicyFromEnv({ SERVICE_STAGE: 'local' })).toEqual(local);
    expect(
      secretPolicyFromEnv({ SERVICE_STAGE: 'prod', CONNECTION_SECRET_PREFIX: connectionSecretPrefixOf('prod') }),
    ).toEqual(prod);
  });

  it('accepts a team connection only where the stage may read it', () => {
    expect(connectionRefProblem('env:X', local)).toBeUndefined();
    expect(connectionRefProblem('env:X', prod)).toMatch(/env: references are for the local default only/);
    expect(connectionRefProblem('secretsmanager:workflow-run-api/prod/connections/t/k', prod)).toBeUndefined();
    expect(connectionRefProblem('ssm:/workflow-run-api/prod/connections/t/k', prod)).toBeUndefined();
    expect(connectionRefProblem('secretsmanager:workflow-run-api/dev/connections/t/k', prod)).toMatch(
      /under workflow-run-api\/prod\/connections\//,
    );
    expect(connectionRefProblem('ssm:/workflow-run-api/prod/providers/x', prod)).toMatch(
      /under \/workflow-run-api\/prod\/connections\//,
    );
    expect(
      connectionRefProblem('secretsmanager:arn:aws:secretsmanager:us-east-1:000000000000:secret:x-AbCdEf', prod),
    ).toMatch(/not its ARN/);
    // Deployed without a known prefix (the CLI without SERVICE_STAGE): some stage's connections.
    const anyStage = { deployed: true, connectionPrefix: undefined };
    expect(connectionRefProblem('secretsmanager:workflow-run-api/dev/connections/t/k', anyStage)).toBeUndefined();
    expect(connectionRefProblem('secretsmanager:other/k', anyStage)).toMatch(/workflow-run-api\/<stage>\/connections/);
  });
});

describe('the secret store', () => {
  /** Stand-in clients answering from `values`; `failWith` makes the next send fail with that error name. */
  const standIn = () => {
    const values = new Map<string, string>();
    const sent: string[] = [];
    let failWith: string | undefined;
    const send = async (command: { input: { SecretId?: string; Name?: string } }) => {
      const name = command.input.SecretId ?? command.input.Name ?? '';
      sent.push(name);
      if (failWith) {
        const error = Object.assign(new Error('failed'), { name: failWith });
        failWith = undefined;
        throw error;
      }
      const value = values.get(name);
      return { SecretString: value, Parameter: { Value: value } };
    };
    const client = { send } as never;
    return {
      values,
      sent,
      fail: (name: string) => {
        failWith = name;
      },
      client,
    };
  };
  let now = 0;
  const store = (clients: ReturnType<typeof standIn>, policy = prod) =>
    createSecretStore({
      policy,
      env: { LOCAL_KEY: 'from-env' },
      secretsManager: clients.client,
      ssm: clients.client,
      now: () => new Date(now),
    });

  it('caches each value for its lifetime, one read for concurrent asks', async () => {
    const clients = standIn();
    clients.values.set('workflow-run-api/prod/providers/x', 'v1');
    const secrets = store(clients);
    const read = () => secrets.providerSecret('workflow-run-api/prod/providers/x');
    expect(await Promise.all([read(), read(), read()])).toEqual(['v1', 'v1', 'v1']);
    expect(clients.sent).toHaveLength(1);
    clients.values.set('workflow-run-api/prod/providers/x', 'v2');
    now += secretCacheMs - 1;
    expect(await read()).toBe('v1');
    now += 1;
    expect(await read()).toBe('v2');
    expect(clients.sent).toHaveLength(2);
  });

  it('answers a missing or refused secret with SecretUnavailableError and rethrows the rest; neither is cached', async () => {
    const clients = standIn();
    const secrets = store(clients);
    const name = 'workflow-run-api/prod/connections/t/k';
    clients.fail('ResourceNotFoundException');
    const missing = await secrets.connectionSecret(`secretsmanager:${name}`).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(SecretUnavailableError);
    expect((missing as Error).message).toBe('the Secrets Manager secret answered ResourceNotFoundException');
    clients.fail('ThrottlingException');
    const throttled = await secrets.connectionSecret(`secretsmanager:${name}`).catch((e: unknown) => e);
    expect(throttled).not.toBeInstanceOf(SecretUnavailableError);
    expect((throttled as Error).name).toBe('ThrottlingException');
    clients.values.set(name, 'team-key');
    expect(await secrets.connectionSecret(`secretsmanager:${name}`)).toBe('team-key');
    expect(clients.sent).toEqual([name, name, name]);
    // A secret with no text value is unavailable too.
    await expect(secrets.providerSecret('ssm:/nothing')).rejects.toThrow('the SSM parameter has no text value');
  });

  it('reads env: references on the local default only, and refuses what the policy refuses before any request', async () => {
    const clients = standIn();
    expect(await store(clients, local).connectionSecret('env:LOCAL_KEY')).toBe('from-env');
    await expect(store(clients, local).connectionSecret('env:UNSET')).rejects.toThrow('the variable UNSET is not set');
    await expect(store(clients, prod).connectionSecret('env:LOCAL_KEY')).rejects.toBeInstanceOf(SecretUnavailableError);
    await expect(store(clients, prod).connectionSecret('secretsmanager:elsewhere/k')).rejects.toThrow(
      /must be named under/,
    );
    expect(clients.sent).toEqual([]);
  });
});
