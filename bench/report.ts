/** Printing helpers every section of the bench shares, so figures line up in one column. */
import { type LatencySummary, ms, perSecond } from './stats.ts';

export const heading = (text: string) => console.log(`\n== ${text}`);
export const line = (label: string, value: string) => console.log(`  ${label.padEnd(58)} ${value}`);
export const latencyLine = (label: string, s: LatencySummary) =>
  line(
    label,
    `${perSecond(s.rps).padStart(12)}   p50 ${ms(s.p50).padStart(9)}   p99 ${ms(s.p99).padStart(9)}   n=${s.count}`,
  );
export const ratio = (v: number) => v.toFixed(2);
/** For figures shown beside a floor without a target of their own. */
export const note = (text: string) => console.log(`      ${text}`);
