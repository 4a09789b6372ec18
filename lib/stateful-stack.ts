import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { BlockPublicAccess, Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { dataTable, type KeyAttribute, libraryBucket, tables } from './definitions.ts';

const attribute = (key: KeyAttribute) => ({
  name: key.name,
  type: key.type === 'S' ? AttributeType.STRING : AttributeType.NUMBER,
});

/**
 * The resources that hold data: the DynamoDB table(s) and the library bucket. They live in their
 * own stack and are retained when it is deleted, so redeploying or removing the API never loses data.
 */
export class StatefulStack extends Stack {
  /** Every table in `tables`, by its definition id. */
  readonly tables: ReadonlyMap<string, Table>;
  /** The application table (`dataTable`). */
  readonly table: Table;
  /** The team library: every file a step produces. */
  readonly bucket: Bucket;

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);

    const byId = new Map<string, Table>();
    for (const definition of tables) {
      const table = new Table(this, definition.id, {
        partitionKey: attribute(definition.partitionKey),
        sortKey: attribute(definition.sortKey),
        billingMode: BillingMode.PAY_PER_REQUEST,
        encryption: TableEncryption.AWS_MANAGED,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        timeToLiveAttribute: definition.ttlAttribute,
        removalPolicy: RemovalPolicy.RETAIN,
      });
      for (const index of definition.indexes) {
        table.addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: attribute(index.partitionKey),
          sortKey: attribute(index.sortKey),
          projectionType: ProjectionType.ALL,
        });
      }
      byId.set(definition.id, table);
    }
    this.tables = byId;
    this.table = byId.get(dataTable.id)!;

    this.bucket = new Bucket(this, libraryBucket.id, {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        { abortIncompleteMultipartUploadAfter: Duration.days(7) },
        ...(libraryBucket.expireObjectsAfterDays === null
          ? []
          : [{ expiration: Duration.days(libraryBucket.expireObjectsAfterDays) }]),
      ],
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Objects are written only by the step executor and read only through two-hour presigned GETs that ' +
        'authenticated, access-logged API calls issue; server access logs would need a second bucket and add ' +
        'no caller identity. Enable CloudTrail S3 data events if per-object audit becomes a requirement.',
    });

    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
  }
}
