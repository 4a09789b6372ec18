/**
 * The bench's bundles section records each function's first request from its source before it
 * measures anything, and stops at the first that fails or has no scenario. Run here over every
 * function the stack deploys, so `npm run bench` keeps running whole.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { checkFirstRequests } from '../bench/cold-start.ts';
import { workers } from '../lib/workers.ts';
import { provision } from '../local/provision.ts';
import { routes } from '../platform/routes.ts';

describe("the bench's bundles section", () => {
  it("every function's first request succeeds, each from a fresh process with its Lambda environment", {
    timeout: 600_000,
  }, async () => {
    const resources = await provision({ prefix: `b${randomUUID().slice(0, 8)}`, ...inject('emulators') });
    const cleanups: (() => Promise<void> | void)[] = [];
    try {
      const outDir = join(process.env.TMPDIR ?? '/tmp', `first-requests-${resources.prefix}`);
      const recorded = await checkFirstRequests({ outDir, resources, cleanups });
      expect(recorded.map((r) => r.id)).toEqual([...routes, ...workers].map((f) => f.id));
      // A function that serves from the emulators sends at least one command; the public pages send none.
      expect(recorded.filter((r) => r.commands.length > 0).length).toBeGreaterThan(recorded.length / 2);
    } finally {
      for (const cleanup of cleanups.reverse()) await cleanup();
    }
  });
});
