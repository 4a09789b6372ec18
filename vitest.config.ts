import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Integration tests are named `*.int.test.ts`: they need the emulators (DynamoDB Local and fauxqs,
 * started once by the global setup) or start the local stack themselves. Every other test file is a
 * unit test: pure, no emulator, run by `npm run test:unit` in seconds. `test/docs.test.ts` checks
 * that a file using the stack helpers is so named, and that one so named uses them.
 */
export const integrationTests = 'test/**/*.int.test.ts';

/**
 * Run after the unit and integration projects (`npm test` runs all three), on what the integration
 * project recorded: the AWS commands each function sent (`local/aws-command-log.ts`), checked
 * against each function's synthesized policy. Not run when the integration project is not.
 */
export const auditTests = ['test/least-privilege.test.ts'];

/** Where the integration project's handlers log the AWS commands they send, for the audit project. */
export const awsCommandLogDir = fileURLToPath(new URL('.test-output/aws-commands/', import.meta.url));

export default defineConfig({
  test: {
    // Generous: on a loaded machine a test may take several times its usual time; a limit only ends a hang.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    maxWorkers: 2,
    env: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true', AWS_REGION: 'us-east-1' },
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [integrationTests, ...auditTests] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: [integrationTests],
          // One DynamoDB Local + fauxqs for the whole project; each test file provisions its own prefix.
          globalSetup: ['test/support/global-setup.ts'],
          // Every AWS client of the local deps logs the commands handlers send (the global setup empties it).
          env: { AWS_COMMAND_LOG_DIR: awsCommandLogDir },
        },
      },
      {
        extends: true,
        test: { name: 'audit', include: auditTests, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
