/**
 * `npm run smoke -- --base-url <url> --key <key> (--agent ID | --project ID) [...]`: the client CLI's
 * `smoke` command (packages/client/src/smoke/), run from this repository. With `--aws-region`, the
 * catalogue's Bedrock defaults are named for the lifecycle check too (`--bedrock-model`), so a default
 * whose step failed before it could say which model it ran is still checked.
 */
import { runCli } from '../packages/client/src/cli.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';

const argv = process.argv.slice(2);
const defaults = argv.includes('--aws-region')
  ? [...new Set(Object.values(bedrockDefaultModels))].flatMap((id) => ['--bedrock-model', id])
  : [];
process.exitCode = await runCli(['smoke', ...argv, ...defaults]);
