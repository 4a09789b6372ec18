/**
 * The bench's run delivery bytes (bench/step-events.ts) on the emulators: a 20-step run's
 * lifecycle deliveries, their bodies made by the webhook worker's own code, carry each step's own
 * result once, not the Run's page of outputs in every step event.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { measureDeliveryBytes } from '../bench/step-events.ts';
import { provision } from '../local/provision.ts';

describe('a run’s lifecycle delivery bytes', () => {
  it('carry each output about twice (its step event, the end), not once per step event', async () => {
    const resources = await provision({ prefix: `d${randomUUID().slice(0, 8)}`, ...inject('emulators') });
    const outputBytes = 250_000;
    const bytes = await measureDeliveryBytes(resources, 20, outputBytes);
    console.info(`run delivery bytes: before ${bytes.before} B, after ${bytes.after} B`);
    expect(bytes.deliveries).toBe(21);
    // Each step event carries its own output; the end carries the Run's page of them.
    expect(bytes.after).toBeLessThan(20 * outputBytes * 2.2);
    expect(bytes.before).toBeGreaterThan(bytes.after * 5);
  });
});
