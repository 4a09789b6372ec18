/** The saturation section's verdict on one level (bench/saturation.ts): what gave out, first signal first. */
import { describe, expect, it } from 'vitest';
import { type SaturationLevel, saturationOf } from '../bench/saturation.ts';

const level = (over: Partial<SaturationLevel>): SaturationLevel => ({
  rate: 8,
  offered: 32,
  accepted: 32,
  refused: {},
  ended: 32,
  endMedianMs: 900,
  backlog: 0,
  ...over,
});

describe('a saturation level', () => {
  it('is kept up with when every start was taken and every run ended in time', () => {
    expect(saturationOf(level({}), 800)).toBeUndefined();
  });

  it('names refused starts first, then unfinished runs with the queue behind them, then time grown', () => {
    expect(saturationOf(level({ accepted: 30, refused: { 429: 2 }, ended: 10 }), 800)).toMatch(/429.*rate limit/);
    expect(saturationOf(level({ accepted: 31, refused: { 503: 1 } }), 800)).toMatch(/503.*contention/);
    expect(saturationOf(level({ ended: 13, backlog: 20 }), 800)).toMatch(
      /19 runs unfinished, 20 messages.*step consumers/,
    );
    expect(saturationOf(level({ endMedianMs: 2_500 }), 800)).toMatch(/3\.1×.*the table/);
  });
});
