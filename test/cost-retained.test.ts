/**
 * The cost model's terms beyond a run's requests (bench/cost-retained.ts, docs/operations.md "Cost
 * model"): exact integers of picodollars, each figure below worked by hand from the prices.
 */
import { describe, expect, it } from 'vitest';
import { emfMetricsOf } from '../bench/cost-logs.ts';
import {
  customMetricShare,
  customMetricsOf,
  dynamoDbPitrCost,
  dynamoDbStorageCost,
  initShare,
  picoDollars,
  s3EgressCost,
  s3StorageCost,
  storedItemBytes,
} from '../bench/cost-retained.ts';
import { dataTable } from '../platform/definitions.ts';
import { metricDimensions, metricNames, metricsNamespace } from '../platform/metric-names.ts';

const megabyte = 2 ** 20;

describe('what a run keeps and shares, priced exactly', () => {
  it('a 1 MB image kept 365 days in S3 Standard is $0.023 × 12 / 1024, and downloaded once $0.09 / 1024', () => {
    expect(s3StorageCost(megabyte, 365)).toBe(269_531_250n); // $0.00026953125
    expect(s3EgressCost(megabyte)).toBe(87_890_625n); // $0.00008789062 5
    expect(s3EgressCost(megabyte, 3)).toBe(3n * 87_890_625n);
    // 30 days is 30 × 12 / 365 of a month's price.
    expect(s3StorageCost(megabyte, 30)).toBe(22_153_253n); // 23e9 × 360 / (1024 × 365), rounded
    expect(s3StorageCost(0, 365)).toBe(0n);
  });

  it('DynamoDB storage at $0.25 and PITR at $0.20 per GB-month, for the retention', () => {
    expect(dynamoDbStorageCost(5000, 365)).toBe(13_969_839n); // 5000 × 12 × 250e9 / 2^30 = 13,969,838.6
    expect(dynamoDbStorageCost(1024, 30)).toBe(235_153n);
    expect(dynamoDbPitrCost(1024, 30)).toBe(188_122n);
    // PITR is 0.8 × the storage, to the rounding.
    expect(dynamoDbPitrCost(megabyte, 365)).toBe((4n * dynamoDbStorageCost(megabyte, 365)) / 5n);
  });

  it("a run's share of the custom metrics and of INIT", () => {
    expect(customMetricShare(8, 100_000)).toBe(24_000_000n); // 8 × $0.30 / 100,000 = $0.000024
    expect(customMetricShare(1, 3)).toBe(100_000_000_000n);
    expect(() => customMetricShare(1, 0)).toThrow();
    // 150.2 ms is billed 151 ms; at 512 MB, $0.0000133334 per GB-s, 1 cold start in 100.
    expect(initShare([{ initMs: 150.2, memoryMb: 512, invocations: 1 }], { coldStarts: 1, per: 100 })).toBe(10_067n);
    // Every invocation cold: 151 ms at 512 MB once and 80 ms at 1024 MB three times.
    expect(
      initShare(
        [
          { initMs: 151, memoryMb: 512, invocations: 1 },
          { initMs: 80, memoryMb: 1024, invocations: 3 },
        ],
        { coldStarts: 1, per: 1 },
      ),
    ).toBe(4_206_688n);
    expect(() => initShare([{ initMs: 1, memoryMb: 512, invocations: 0.5 }], { coldStarts: 1, per: 1 })).toThrow();
  });

  it('sizes what a run leaves as DynamoDB bills storage: items and index entries apart, 100 bytes of overhead each', () => {
    const run = {
      PK: 'RUN#a',
      SK: 'RUN',
      GSI4PK: 'T',
      GSI4SK: 'x',
      status: 'done',
      inputs: 'zz',
    };
    // The item: 7 + 5 + 7 + 7 + 10 + 8 = 44, + 100. Its GSI5 entry: the keys and `status` (projected;
    // `inputs` is not), 36, + 100. No other index: no GSI1-3 keys.
    expect(storedItemBytes([run], dataTable)).toEqual({ table: 144, indexes: 136 });
    // A step: no index keys, the item alone.
    expect(storedItemBytes([{ PK: 'RUN#a', SK: 'STEP#s0' }], dataTable)).toEqual({
      table: 2 + 5 + 2 + 7 + 100,
      indexes: 0,
    });
    // A KEYS_ONLY index (GSI2) takes the keys alone.
    expect(storedItemBytes([{ PK: 'D#a', SK: 'D', GSI2PK: 'W', GSI2SK: 'x', secret: 'yyyy' }], dataTable)).toEqual({
      table: 2 + 3 + (2 + 1) + (6 + 1) + (6 + 1) + (6 + 4) + 100,
      indexes: 2 + 3 + (2 + 1) + (6 + 1) + (6 + 1) + 100,
    });
  });

  it('counts the custom metrics as CloudWatch does: each name with each dimension set, declared or emitted', () => {
    const dimensions = metricDimensions('prod');
    const line = {
      ...dimensions,
      RunsStarted: 1,
      StepsCompleted: 2,
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: metricsNamespace,
            Dimensions: [['service', 'stage']],
            Metrics: [{ Name: 'RunsStarted' }, { Name: 'StepsCompleted' }],
          },
        ],
      },
    };
    const emitted = emfMetricsOf(line);
    expect(emitted).toEqual([
      `${metricsNamespace}/RunsStarted/service=workflow-run-api,stage=prod`,
      `${metricsNamespace}/StepsCompleted/service=workflow-run-api,stage=prod`,
    ]);
    const names = Object.values(metricNames);
    const declared = { namespace: metricsNamespace, names, dimensions };
    expect(customMetricsOf(declared, emitted)).toEqual({ count: names.length, declared: names.length, undeclared: [] });
    // A metric published with a second dimension set is another metric.
    const byReason = emfMetricsOf({
      ...line,
      reason: 'timeout',
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: metricsNamespace,
            Dimensions: [['service', 'stage', 'reason']],
            Metrics: [{ Name: 'RunsStarted' }],
          },
        ],
      },
    });
    expect(customMetricsOf(declared, [...emitted, ...byReason]).count).toBe(names.length + 1);
  });

  it('prints picodollars as dollars, rounded half up', () => {
    expect(picoDollars(269_531_250n)).toBe('$0.0002695');
    expect(picoDollars(87_890_625n, 9)).toBe('$0.000087891');
    expect(picoDollars(24_000_000n)).toBe('$0.0000240');
    expect(picoDollars(0n)).toBe('$0.0000000');
  });
});
