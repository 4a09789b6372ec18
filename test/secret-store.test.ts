/**
 * The secret-store emulator (local/secret-store.ts) through the real SDK clients: what the service
 * reads (GetSecretValue, GetParameter WithDecryption) and what sets it up (CreateSecret,
 * PutParameter), with the errors AWS answers for a missing or existing name.
 */
import {
  CreateSecretCommand,
  GetSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
} from '@aws-sdk/client-secrets-manager';
import {
  GetParameterCommand,
  ParameterAlreadyExists,
  ParameterNotFound,
  PutParameterCommand,
} from '@aws-sdk/client-ssm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretStoreEmulator, startSecretStore } from '../local/secret-store.ts';

let store: SecretStoreEmulator;
beforeAll(async () => {
  store = await startSecretStore();
});
afterAll(() => store.close());

describe('the secret-store emulator, through the real SDK clients', () => {
  it('Secrets Manager: CreateSecret, then GetSecretValue; a name made twice or never answers as AWS does', async () => {
    const { secretsManager } = store.clients();
    const name = 'workflow-run-api/dev/providers/replicate';
    const created = await secretsManager.send(
      new CreateSecretCommand({ Name: name, SecretString: '{"apiKey":"r8_x"}' }),
    );
    expect(created.ARN).toBe(`arn:aws:secretsmanager:us-east-1:000000000000:secret:${name}-AbCdEf`);
    const read = await secretsManager.send(new GetSecretValueCommand({ SecretId: name }));
    expect(read.SecretString).toBe('{"apiKey":"r8_x"}');
    await expect(
      secretsManager.send(new CreateSecretCommand({ Name: name, SecretString: 'again' })),
    ).rejects.toBeInstanceOf(ResourceExistsException);
    await expect(secretsManager.send(new GetSecretValueCommand({ SecretId: 'absent' }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
  });

  it('SSM: PutParameter of a SecureString, then GetParameter decrypted (or not); overwriting needs Overwrite', async () => {
    const { ssm } = store.clients();
    const name = '/workflow-run-api/dev/providers/fal';
    await ssm.send(new PutParameterCommand({ Name: name, Type: 'SecureString', Value: '{"apiKey":"fal_x"}' }));
    const decrypted = await ssm.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
    expect(decrypted.Parameter).toMatchObject({ Name: name, Type: 'SecureString', Value: '{"apiKey":"fal_x"}' });
    const sealed = await ssm.send(new GetParameterCommand({ Name: name }));
    expect(sealed.Parameter?.Value).not.toContain('fal_x');
    await expect(
      ssm.send(new PutParameterCommand({ Name: name, Type: 'SecureString', Value: 'other' })),
    ).rejects.toBeInstanceOf(ParameterAlreadyExists);
    await ssm.send(new PutParameterCommand({ Name: name, Type: 'SecureString', Value: 'other', Overwrite: true }));
    expect((await ssm.send(new GetParameterCommand({ Name: name, WithDecryption: true }))).Parameter?.Value).toBe(
      'other',
    );
    await expect(ssm.send(new GetParameterCommand({ Name: '/absent' }))).rejects.toBeInstanceOf(ParameterNotFound);
  });

  it('keeps each request by operation and name, never a value', () => {
    const targets = store.requests.map((r) => r.target);
    expect(targets).toContain('secretsmanager.CreateSecret');
    expect(targets).toContain('AmazonSSM.PutParameter');
    expect(store.requests.find((r) => r.target === 'AmazonSSM.GetParameter' && r.withDecryption)).toMatchObject({
      name: '/workflow-run-api/dev/providers/fal',
    });
    expect(JSON.stringify(store.requests)).not.toMatch(/r8_x|fal_x|other/);
  });
});
