import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  type ITable,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { BlockPublicAccess, Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { dataTable, type IndexProjection, type KeyAttribute, libraryBucket, tables } from '../platform/definitions.ts';
import { TableBackups } from './backups.ts';
import type { StageConfig } from './stages.ts';

const attribute = (key: KeyAttribute) => ({
  name: key.name,
  type: key.type === 'S' ? AttributeType.STRING : AttributeType.NUMBER,
});

const projection = (p: IndexProjection) =>
  p.type === 'KEYS_ONLY'
    ? { projectionType: ProjectionType.KEYS_ONLY }
    : { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: [...p.attributes] };

export interface StatefulStackProps extends StackProps {
  /** The stage: its retention, and whether data is protected (prod) or disposable (dev). */
  config: StageConfig;
}

/**
 * The resources that hold data: the DynamoDB table(s) and the library bucket, in their own stack.
 * On prod they are retained when the stack is deleted and the table has deletion protection, so
 * redeploying or removing the API never loses data; a dev stage is disposable (`cdk destroy`
 * deletes the table and empties and deletes the bucket). Run data expires after the stage's
 * retention: items through the table's TTL attribute, output files through a lifecycle rule.
 */
export class StatefulStack extends Stack {
  /** Every table in `tables`, by its definition id. */
  readonly tables: ReadonlyMap<string, ITable>;
  /** The application table (`dataTable`): this stack's, or the existing one `-c tableName` names. */
  readonly table: ITable;
  /** The team library: every file a step produces. */
  readonly bucket: Bucket;

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, props);
    const { config } = props;
    const removalPolicy = config.protectData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    // A bucket that a failed creation leaves is empty (nothing used it yet): deleted on that
    // rollback, kept on every later delete. The table keeps RETAIN: its deletion protection would
    // refuse the rollback's delete (ROLLBACK_FAILED); its name is generated, so a retry makes a new one.
    const bucketRemovalPolicy = config.protectData ? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE : RemovalPolicy.DESTROY;

    const byId = new Map<string, ITable>();
    const existing = config.deploys.existingTable;
    for (const definition of tables) {
      if (existing && definition.id === dataTable.id) {
        // A restored table (docs/deploy.md): used, not managed, so its settings are the operator's to
        // set after the restore (stream, TTL, PITR, deletion protection), and this stack never deletes it.
        const imported = Table.fromTableAttributes(this, definition.id, {
          tableName: existing.name,
          tableStreamArn: existing.streamArn,
          globalIndexes: definition.indexes.map((index) => index.name),
        });
        byId.set(definition.id, imported);
        continue;
      }
      const table = new Table(this, definition.id, {
        partitionKey: attribute(definition.partitionKey),
        sortKey: attribute(definition.sortKey),
        billingMode: BillingMode.PAY_PER_REQUEST,
        encryption: TableEncryption.AWS_MANAGED,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        timeToLiveAttribute: definition.ttlAttribute,
        // Read by the operator events' publisher; DynamoDB bills no stream reads made by Lambda.
        ...(definition.stream ? { stream: StreamViewType.NEW_AND_OLD_IMAGES } : {}),
        deletionProtection: config.protectData,
        removalPolicy,
      });
      for (const index of definition.indexes) {
        table.addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: attribute(index.partitionKey),
          sortKey: attribute(index.sortKey),
          ...projection(index.projection),
        });
      }
      byId.set(definition.id, table);
    }
    this.tables = byId;
    this.table = byId.get(dataTable.id)!;
    if (config.deploys.backups) new TableBackups(this, 'Backups', { table: this.table });

    this.bucket = new Bucket(this, libraryBucket.id, {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      removalPolicy: bucketRemovalPolicy,
      // dev only: a custom resource empties the bucket so that CloudFormation can delete it.
      autoDeleteObjects: !config.protectData,
      lifecycleRules: [
        // A step stores each file in one PutObject, so a multipart upload left over is a failed one.
        { id: 'AbortIncompleteUploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Files expire with the runs that made them (a run's TTL counts from its start, before its files).
        { id: 'ExpireRunFiles', expiration: Duration.days(config.retentionDays) },
        // An upload is used within its 24 hours or never (functions/app/uploads.ts): a rejected or
        // unused one is gone a day later without anyone deleting it. Where two rules expire one object,
        // S3 applies the sooner.
        {
          id: 'ExpireUploads',
          prefix: libraryBucket.uploadPrefix,
          expiration: Duration.days(libraryBucket.uploadExpiryDays),
        },
      ],
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Only the step executor writes and reads objects itself (under teams/, by IAM); callers get them ' +
        'through two-hour presigned GETs issued by authenticated, access-logged API calls or sent in their ' +
        "run's webhook. Server access logs would need a second bucket and add no caller identity. Enable " +
        'CloudTrail S3 data events if per-object audit becomes a requirement.',
    });

    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
  }
}
