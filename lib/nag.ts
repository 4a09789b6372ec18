import { Stack } from 'aws-cdk-lib';
// cdk-nag's own spelling of CloudFormation references in findings; not re-exported from its index.
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { IConstruct } from 'constructs';

/**
 * The `Resource::…` part of a cdk-nag IAM5 finding for a wildcard resource built from `arn` (an
 * attribute of `resource`) in a policy that lives in `consumer`, e.g. `<table ARN>/index/*`.
 *
 * cdk-nag names findings after the resolved reference, which for a resource of another stack is
 * the export name CDK generates (stack name + logical id + hash). Acknowledging that by hand would
 * break with every stack prefix; this derives it the way cdk-nag does. Exporting the value here is
 * what the cross-stack reference would do anyway, so the template is unchanged.
 */
export function wildcardResourceFinding(consumer: Stack, resource: IConstruct, arn: string, suffix: string): string {
  const producer = Stack.of(resource);
  const seenByConsumer = producer === consumer ? arn : producer.exportValue(arn);
  return `Resource::${flattenCfnReference(consumer.resolve(seenByConsumer))}${suffix}`;
}
