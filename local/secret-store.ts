/**
 * A secret-store emulator on loopback: Secrets Manager and SSM Parameter Store, which no emulator
 * the project runs provides (moto needs Python; LocalStack, Docker). One HTTP server speaks the AWS
 * JSON 1.1 protocol (the `X-Amz-Target` header names the operation) for exactly what the service
 * reads and what sets it up: `secretsmanager.GetSecretValue` (of the `AWSCURRENT` version, or of
 * `AWSPREVIOUS`, which exists once a value was put over another: `PutSecretValue`), `secretsmanager.CreateSecret`,
 * `AmazonSSM.GetParameter` and `AmazonSSM.PutParameter`. The real SDK clients reach it through
 * their `endpoint` (a bundle through `AWS_ENDPOINT_URL_SECRETS_MANAGER` / `AWS_ENDPOINT_URL_SSM`);
 * it keeps every request (target and name, never a value) so tests and the rehearsal count reads.
 * Used by test/secrets.int.test.ts and the rehearsal (local/rehearse/providers.ts).
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SSMClient } from '@aws-sdk/client-ssm';
import { localAwsConfig } from './emulators.ts';

export interface SecretStoreRequest {
  /** The operation: `secretsmanager.GetSecretValue`, `AmazonSSM.GetParameter`, or one that sets a value. */
  target: string;
  /** The SecretId or parameter Name asked for. */
  name: string;
  /** GetParameter's WithDecryption. */
  withDecryption?: boolean;
}

export const startSecretStore = async () => {
  /** Secrets Manager secrets by name, SSM parameters by name (SecureString values). */
  const secrets = new Map<string, string>();
  /** Each secret's version before its current one (Secrets Manager's `AWSPREVIOUS`), once it has one. */
  const previous = new Map<string, string>();
  const parameters = new Map<string, string>();
  const requests: SecretStoreRequest[] = [];

  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk.toString();
    });
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      const body = JSON.parse(raw || '{}') as {
        SecretId?: string;
        Name?: string;
        WithDecryption?: boolean;
        SecretString?: string;
        Value?: string;
        Type?: string;
        Overwrite?: boolean;
        VersionStage?: string;
      };
      const answer = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(value));
      const missing = (type: string) => answer(400, { __type: type, message: 'not found' });
      if (target === 'secretsmanager.GetSecretValue') {
        const name = body.SecretId ?? '';
        requests.push({ target, name });
        const stage = body.VersionStage ?? 'AWSCURRENT';
        if (stage !== 'AWSCURRENT' && stage !== 'AWSPREVIOUS') return missing('ResourceNotFoundException');
        // As Secrets Manager: a secret with no such version answers ResourceNotFoundException.
        const value = stage === 'AWSCURRENT' ? secrets.get(name) : secrets.has(name) ? previous.get(name) : undefined;
        if (value === undefined) return missing('ResourceNotFoundException');
        return answer(200, {
          ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${name}-AbCdEf`,
          Name: name,
          SecretString: value,
          VersionId: stage === 'AWSCURRENT' ? 'v2' : 'v1',
          VersionStages: [stage],
          CreatedDate: 1_700_000_000,
        });
      }
      if (target === 'secretsmanager.PutSecretValue') {
        const name = body.SecretId ?? '';
        requests.push({ target, name });
        const current = secrets.get(name);
        if (current === undefined) return missing('ResourceNotFoundException');
        if (body.SecretString === undefined) {
          return answer(400, { __type: 'InvalidParameterException', message: 'SecretString is required here' });
        }
        previous.set(name, current);
        secrets.set(name, body.SecretString);
        return answer(200, { ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${name}-AbCdEf`, Name: name });
      }
      if (target === 'secretsmanager.CreateSecret') {
        const name = body.Name ?? '';
        requests.push({ target, name });
        if (secrets.has(name)) return answer(400, { __type: 'ResourceExistsException', message: `${name} exists` });
        if (body.SecretString === undefined) {
          return answer(400, { __type: 'InvalidParameterException', message: 'SecretString is required here' });
        }
        secrets.set(name, body.SecretString);
        return answer(200, {
          ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${name}-AbCdEf`,
          Name: name,
          VersionId: 'v1',
        });
      }
      if (target === 'AmazonSSM.PutParameter') {
        const name = body.Name ?? '';
        requests.push({ target, name });
        if (parameters.has(name) && body.Overwrite !== true) {
          return answer(400, { __type: 'ParameterAlreadyExists', message: `${name} exists` });
        }
        if (body.Type !== 'SecureString' || body.Value === undefined) {
          return answer(400, { __type: 'ValidationException', message: 'only SecureString values are kept here' });
        }
        parameters.set(name, body.Value);
        return answer(200, { Version: 1, Tier: 'Standard' });
      }
      if (target === 'AmazonSSM.GetParameter') {
        const name = body.Name ?? '';
        requests.push({ target, name, withDecryption: body.WithDecryption });
        const value = parameters.get(name);
        if (value === undefined) return missing('ParameterNotFound');
        return answer(200, {
          Parameter: {
            Name: name,
            Type: 'SecureString',
            Value: body.WithDecryption ? value : 'AQICAHencrypted',
            Version: 1,
            ARN: `arn:aws:ssm:us-east-1:000000000000:parameter${name}`,
          },
        });
      }
      answer(400, { __type: 'UnknownOperationException', message: target });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    endpoint,
    secrets,
    parameters,
    requests,
    /** Clients of the real SDK pointed at the emulator (no retries, so a count is exact). */
    clients: () => ({
      secretsManager: new SecretsManagerClient({ ...localAwsConfig, endpoint, maxAttempts: 1 }),
      ssm: new SSMClient({ ...localAwsConfig, endpoint, maxAttempts: 1 }),
    }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

export type SecretStoreEmulator = Awaited<ReturnType<typeof startSecretStore>>;
