import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Runs the check that `npm start` and `npm test` run first, with a PATH and Chromium path of our choosing. */
const check = (purpose: 'start' | 'test', env: { PATH: string; CHROMIUM_PATH: string }) => {
  const result = spawnSync(process.execPath, ['local/check-prerequisites.mjs', purpose], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { status: result.status, lines: result.stderr.split('\n').filter(Boolean) };
};

/** A directory holding a fake `java` that answers `java -version` as the given release would. */
const fakeJava = (versionLine: string, exitCode = 0) => {
  const dir = mkdtempSync(join(tmpdir(), 'fake-java-'));
  writeFileSync(join(dir, 'java'), `#!/bin/sh\necho '${versionLine}' >&2\nexit ${exitCode}\n`, { mode: 0o755 });
  return dir;
};

const java17 = fakeJava('openjdk version "17.0.15" 2025-04-15');
/** Any executable file stands for Chromium: the check only looks that it is there. */
const chromium = join(java17, 'java');

describe('the prerequisites check', () => {
  it('passes when Java 17+ and Chromium are there', () => {
    expect(check('test', { PATH: java17, CHROMIUM_PATH: chromium })).toEqual({ status: 0, lines: [] });
  });

  it('names a missing Java runtime in one line, with the package to install', () => {
    const { status, lines } = check('start', { PATH: '/nonexistent', CHROMIUM_PATH: chromium });
    expect(status).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^Java is missing .*apt-get install openjdk-17-jre-headless/)]);
  });

  it('refuses a Java older than 17', () => {
    const { status, lines } = check('start', { PATH: fakeJava('java version "1.8.0_392"'), CHROMIUM_PATH: chromium });
    expect(status).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^Java 17\+ is needed for DynamoDB Local, found Java 8/)]);
  });

  it('names a missing Chromium for npm test, at the path the API reference page test uses', () => {
    const { status, lines } = check('test', { PATH: java17, CHROMIUM_PATH: '/nonexistent/chromium' });
    expect(status).toBe(1);
    expect(lines).toEqual([
      expect.stringMatching(/^Chromium is missing at \/nonexistent\/chromium .*apt-get install chromium/),
    ]);
  });

  it('does not ask for Chromium before npm start', () => {
    expect(check('start', { PATH: java17, CHROMIUM_PATH: '/nonexistent/chromium' })).toEqual({ status: 0, lines: [] });
  });
});
