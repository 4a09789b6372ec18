/**
 * The part of a run's bill that is not in its requests (docs/operations.md, "Cost model"): what
 * it leaves behind and pays for over the stage's retention, and its shares of what is billed by
 * the month or by the cold start. Each term is exact integer arithmetic in picodollars (10^-12 $,
 * rounded half up once, at the end of each term), so a test can pin it to the last digit.
 *
 * - S3 Standard storage of its outputs for the retention, and their egress when downloaded;
 * - DynamoDB storage of the items it leaves (the run's partition and their index entries) for the
 *   retention, and point-in-time recovery (on for every stage: lib/stateful-stack.ts) on the same bytes;
 * - its share of the custom metrics (EMF), billed per metric and month once there is traffic;
 * - its share of INIT time: AWS bills the INIT phase of on-demand functions since 1 August 2025.
 *
 * Prices: us-east-1, without the free tier, read 2026-11-27 (sources in docs/operations.md).
 */
import type { IndexDefinition } from '../platform/definitions.ts';
import { itemSizeBytes } from './cost-meter.ts';

/** Picodollars (10^-12 $) per unit: integers, so the terms below are exact. */
export const retainedPrices = {
  /** S3 Standard, first 50 TB a month: $0.023 per GB-month. */
  s3StandardGbMonth: 23_000_000_000n,
  /** S3 data transfer out to the internet, first 10 TB a month: $0.09 per GB. */
  s3EgressGb: 90_000_000_000n,
  /** DynamoDB Standard table class storage: $0.25 per GB-month. */
  dynamoDbStorageGbMonth: 250_000_000_000n,
  /** DynamoDB continuous backups (PITR): $0.20 per GB-month of the table's size. */
  dynamoDbPitrGbMonth: 200_000_000_000n,
  /** CloudWatch custom metric, first 10,000: $0.30 per metric and month. */
  customMetricMonth: 300_000_000_000n,
  /** Lambda arm64 duration: $0.0000133334 per GB-s (INIT billed as duration). */
  lambdaGbSecond: 13_333_400n,
} as const;

const bytesPerGb = 2n ** 30n;

/**
 * DynamoDB's storage overhead per item, and per index entry: "100 bytes of overhead per item for
 * indexing" (DynamoDB developer guide, read 2026-11-27).
 */
export const dynamoDbItemOverheadBytes = 100;

/** `numerator / denominator`, rounded half up (both non-negative). */
const divideRounded = (numerator: bigint, denominator: bigint) => (2n * numerator + denominator) / (2n * denominator);

/** A month as AWS bills storage: a twelfth of a 365-day year (365 days is 12 months). */
const gbMonths = (bytes: bigint, days: bigint, pricePerGbMonth: bigint) =>
  divideRounded(bytes * days * 12n * pricePerGbMonth, bytesPerGb * 365n);

const whole = (value: number, what: string) => {
  if (!Number.isInteger(value) || value < 0) throw new Error(`${what} must be a whole number ≥ 0, got ${value}`);
  return BigInt(value);
};

/** S3 Standard storage of `bytes` kept `days` days. */
export const s3StorageCost = (bytes: number, days: number) =>
  gbMonths(whole(bytes, 'bytes'), whole(days, 'days'), retainedPrices.s3StandardGbMonth);

/** S3 egress of `bytes` downloaded `downloads` times to the internet. */
export const s3EgressCost = (bytes: number, downloads = 1) =>
  divideRounded(whole(bytes, 'bytes') * whole(downloads, 'downloads') * retainedPrices.s3EgressGb, bytesPerGb);

/** DynamoDB storage of `bytes` (items and index entries, overhead included) kept `days` days. */
export const dynamoDbStorageCost = (bytes: number, days: number) =>
  gbMonths(whole(bytes, 'bytes'), whole(days, 'days'), retainedPrices.dynamoDbStorageGbMonth);

/** PITR on the same bytes for as long as they are in the table. */
export const dynamoDbPitrCost = (bytes: number, days: number) =>
  gbMonths(whole(bytes, 'bytes'), whole(days, 'days'), retainedPrices.dynamoDbPitrGbMonth);

/** One run's share of `metrics` custom metrics a month, at `runsPerMonth` runs a month. */
export const customMetricShare = (metrics: number, runsPerMonth: number) => {
  const runs = whole(runsPerMonth, 'runsPerMonth');
  if (runs === 0n) throw new Error('runsPerMonth must be at least 1');
  return divideRounded(whole(metrics, 'metrics') * retainedPrices.customMetricMonth, runs);
};

/**
 * A run's share of INIT: each function it invokes, `invocations` times per run, `initMs` of INIT
 * (billed by the millisecond, rounded up) at its memory, cold for `coldStarts` of every `per`
 * invocations.
 */
export const initShare = (
  functions: readonly { initMs: number; memoryMb: number; invocations: number }[],
  coldStarts: { coldStarts: number; per: number },
) => {
  const per = whole(coldStarts.per, 'per');
  if (per === 0n) throw new Error('per must be at least 1');
  const numerator = functions.reduce(
    (sum, f) =>
      sum +
      BigInt(Math.ceil(f.initMs)) *
        whole(f.memoryMb, 'memoryMb') *
        whole(f.invocations, 'invocations') *
        whole(coldStarts.coldStarts, 'coldStarts') *
        retainedPrices.lambdaGbSecond,
    0n,
  );
  return divideRounded(numerator, 1000n * 1024n * per);
};

type Item = Record<string, unknown>;

/**
 * The bytes a set of items takes as DynamoDB bills storage: in the table, each item's size and its
 * 100 bytes of overhead; in the global secondary indexes, for each index whose keys it carries, an
 * entry of the table's and the index's keys and the projected attributes, priced as an item of them
 * with the same overhead. Point-in-time recovery is billed on the table's data (and local secondary
 * indexes, of which the table has none), so on `table` alone.
 */
export const storedItemBytes = (
  items: readonly Item[],
  table: { partitionKey: { name: string }; sortKey: { name: string }; indexes: readonly IndexDefinition[] },
): { table: number; indexes: number } =>
  items.reduce<{ table: number; indexes: number }>(
    (sum, item) => {
      let indexes = 0;
      for (const index of table.indexes) {
        const keys = [table.partitionKey.name, table.sortKey.name, index.partitionKey.name, index.sortKey.name];
        if (item[index.partitionKey.name] === undefined || item[index.sortKey.name] === undefined) continue;
        const projected = index.projection.type === 'KEYS_ONLY' ? [] : index.projection.attributes;
        const entry = Object.fromEntries(
          [...new Set([...keys, ...projected])].filter((name) => item[name] !== undefined).map((n) => [n, item[n]]),
        );
        indexes += itemSizeBytes(entry) + dynamoDbItemOverheadBytes;
      }
      return {
        table: sum.table + itemSizeBytes(item) + dynamoDbItemOverheadBytes,
        indexes: sum.indexes + indexes,
      };
    },
    { table: 0, indexes: 0 },
  );

/** The assumptions the per-run shares rest on (printed beside them). */
export const retainedAssumptions = {
  /** Each output downloaded once, from S3 straight to the internet. */
  downloads: 1,
  /** Runs a month a stage with traffic makes, over which the custom metrics' month is shared. */
  runsPerMonth: 100_000,
  /**
   * Cold starts: 1 invocation in 100, AWS's figure for production workloads ("INITs typically occur
   * in under 1% of invocations", the announcement), and 1 in 1, a quiet stage where every run meets
   * cold functions (the worst case).
   */
  coldStartsTypical: { coldStarts: 1, per: 100 },
  coldStartsQuiet: { coldStarts: 1, per: 1 },
  /** The example output: a 1 MB image. */
  exampleOutputBytes: 2 ** 20,
} as const;

/** Picodollars as dollars, with `digits` decimals (rounded half up). */
export const picoDollars = (value: bigint, digits = 7) => {
  const scale = 10n ** BigInt(12 - digits);
  const rounded = divideRounded(value, scale);
  const text = rounded.toString().padStart(digits + 1, '0');
  return `$${text.slice(0, -digits)}.${text.slice(-digits)}`;
};

/** Picodollars as a number of dollars (for sums with the float terms of bench/cost-meter.ts). */
export const toDollars = (value: bigint) => Number(value) / 1e12;

/**
 * The custom metrics a stage publishes once there is traffic: every metric name the service
 * declares (`platform/metric-names.ts`) with its one dimension set (service and stage), and any
 * other the EMF lines of a measured run carried (`emitted`, as bench/cost-logs.ts names them).
 */
export const customMetricsOf = (
  declared: { namespace: string; names: readonly string[]; dimensions: Record<string, string> },
  emitted: readonly string[] = [],
) => {
  const dimensions = Object.keys(declared.dimensions)
    .sort()
    .map((name) => `${name}=${declared.dimensions[name]}`)
    .join(',');
  const names = new Set(declared.names.map((name) => `${declared.namespace}/${name}/${dimensions}`));
  const undeclared = emitted.filter((metric) => !names.has(metric));
  return { count: names.size + new Set(undeclared).size, declared: names.size, undeclared: [...new Set(undeclared)] };
};
