/**
 * The estimate's pure rules, without I/O: the multipliers of the hours to come, when a deferred run
 * would start, and the licence a run's outputs would carry.
 */
import { describe, expect, it } from 'vitest';
import { plannedLicence } from '../functions/domain/licence.ts';
import {
  currentMultiplier,
  deferredStartOf,
  nextHourMultipliers,
  outlookHours,
  type PriceSettings,
} from '../functions/domain/price-multiplier.ts';
import { catalogueDefaults } from '../platform/model-defaults.ts';
import { canvasNode } from './support/canvas.ts';

const hourly = Array.from({ length: 24 }, (_, hour) => (hour + 1) / 10);
const at = (iso: string) => new Date(iso);

describe('nextHourMultipliers', () => {
  it('gives each of the next 24 UTC hours its scheduled multiplier, from the next hour’s start', () => {
    const hours = nextHourMultipliers({ multiplier: null, hourly }, at('2026-12-31T22:59:59.999Z'));
    expect(hours).toHaveLength(outlookHours);
    expect(hours[0]).toEqual({ startsAt: at('2026-12-31T23:00:00.000Z'), multiplier: 2.4 });
    // Across the year's end, hour by hour.
    expect(hours[1]).toEqual({ startsAt: at('2027-01-01T00:00:00.000Z'), multiplier: 0.1 });
    expect(hours[23]).toEqual({ startsAt: at('2027-01-01T22:00:00.000Z'), multiplier: 2.3 });
  });

  it('a live multiplier holds every hour; with neither set, every hour is 1', () => {
    const now = at('2026-12-07T12:30:00.000Z');
    const live: PriceSettings = { multiplier: 0.6, hourly };
    expect(new Set(nextHourMultipliers(live, now).map((h) => h.multiplier))).toEqual(new Set([0.6]));
    expect(currentMultiplier(live, now)).toBe(0.6);
    const none = nextHourMultipliers({ multiplier: null, hourly: null }, now);
    expect(new Set(none.map((h) => h.multiplier))).toEqual(new Set([1]));
  });
});

describe('deferredStartOf', () => {
  const now = at('2026-12-07T12:30:00.000Z');
  const settings: PriceSettings = { multiplier: null, hourly };
  const inForce = { startsAt: now, multiplier: currentMultiplier(settings, now) };
  const hours = nextHourMultipliers(settings, now);
  const expiresAt = at('2026-12-08T12:30:00.000Z');

  it('starts at once when the multiplier in force is at most maxMultiplier', () => {
    expect(deferredStartOf(inForce, hours, 1.3, expiresAt)).toEqual(inForce);
  });

  it('else at the first hour to come whose multiplier is, before the run expires', () => {
    // 1.3 now (hour 12), 1.4 … 2.4 until 23:00, then 0.1 at midnight.
    expect(deferredStartOf(inForce, hours, 1.2, expiresAt)).toEqual({
      startsAt: at('2026-12-08T00:00:00.000Z'),
      multiplier: 0.1,
    });
    expect(deferredStartOf(inForce, hours, 0.05, expiresAt)).toBeUndefined();
    // An hour that starts when the run has expired does not count.
    expect(deferredStartOf(inForce, hours, 1.2, at('2026-12-08T00:00:00.000Z'))).toBeUndefined();
  });
});

describe('plannedLicence', () => {
  it('is the strictest licence over the model steps as each resolves its provider and model; none without a model', () => {
    const now = at('2026-12-07T12:00:00.000Z');
    const nodes = [
      canvasNode('topic', 'TextEntry', { text: 'otters' }),
      canvasNode('llm', 'LlmWorker'),
      canvasNode('image', 'ImageGen', { provider: 'fal', model: 'fal-ai/flux/schnell' }),
    ];
    const licence = plannedLicence(nodes, catalogueDefaults, now);
    // One model per model step, by node id, stamped now with the model the step would use.
    expect(licence?.models.map((m) => [m.node_id, m.provider_key, m.model, m.stamped_at])).toEqual([
      ['image', 'fal', 'fal-ai/flux/schnell', now.toISOString()],
      ['llm', 'bedrock', catalogueDefaults.LlmWorker.model, now.toISOString()],
    ]);
    // The strictest of the two wins.
    const order = ['no', 'unchecked', 'provider_terms', 'yes'];
    const strictest = (licence?.models ?? [])
      .map((m) => m.commercial_use ?? 'unchecked')
      .sort((a, b) => order.indexOf(a) - order.indexOf(b))[0];
    expect(licence?.commercial_use).toBe(strictest);
    expect(plannedLicence([canvasNode('topic', 'TextEntry', { text: 'x' })], undefined, now)).toBeUndefined();
  });
});
