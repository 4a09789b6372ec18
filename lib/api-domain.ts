import { CfnOutput } from 'aws-cdk-lib';
import { ApiMapping, DomainName, type HttpApi, type HttpStage, SecurityPolicy } from 'aws-cdk-lib/aws-apigatewayv2';
import { Certificate, CertificateValidation, type ICertificate } from 'aws-cdk-lib/aws-certificatemanager';
import { ARecord, HostedZone, RecordTarget } from 'aws-cdk-lib/aws-route53';
import { ApiGatewayv2DomainProperties } from 'aws-cdk-lib/aws-route53-targets';
import { Construct } from 'constructs';
import type { DomainConfig } from './edge-config.ts';

/**
 * The domain's hosted zone, and the certificate of `name` in the stack's region: the existing one
 * the configuration names (`existingArn`), or one ACM validates through a record in that zone.
 */
export const zoneAndCertificate = (scope: Construct, domain: DomainConfig, name: string, existingArn?: string) => {
  const zone = HostedZone.fromHostedZoneAttributes(scope, 'Zone', {
    hostedZoneId: domain.hostedZoneId,
    zoneName: domain.hostedZoneName,
  });
  const certificate: ICertificate = existingArn
    ? Certificate.fromCertificateArn(scope, 'Certificate', existingArn)
    : new Certificate(scope, 'Certificate', { domainName: name, validation: CertificateValidation.fromDns(zone) });
  return { zone, certificate };
};

export interface ApiDomainProps {
  domain: DomainConfig;
  api: HttpApi;
  stage: HttpStage;
}

/**
 * The HTTP API's own custom domain, in the API's region: its certificate (an existing one from
 * the configuration, or one ACM validates through a record in the hosted zone), the regional
 * `DomainName`, the `ApiMapping` of the stage at its root (routes keep their `/api/v1` prefix), and
 * the alias record. Without the edge this is the public name; with it, CloudFront's origin
 * (`origin.<name>`, docs/decisions.md). The stack disables the `execute-api` endpoint beside it.
 */
export class ApiDomain extends Construct {
  readonly domainName: DomainName;

  constructor(scope: Construct, id: string, props: ApiDomainProps) {
    super(scope, id);
    const { domain, api, stage } = props;
    const { zone, certificate } = zoneAndCertificate(this, domain, domain.apiDomainName, domain.certificateArn);
    this.domainName = new DomainName(this, 'DomainName', {
      domainName: domain.apiDomainName,
      certificate,
      securityPolicy: SecurityPolicy.TLS_1_2,
    });
    new ApiMapping(this, 'Mapping', { api, domainName: this.domainName, stage });
    const target = RecordTarget.fromAlias(
      new ApiGatewayv2DomainProperties(this.domainName.regionalDomainName, this.domainName.regionalHostedZoneId),
    );
    // IPv4 only: the domain's endpoint is not dual-stack, so an AAAA alias would lead nowhere.
    new ARecord(this, 'Alias', { zone, recordName: domain.apiDomainName, target });
    new CfnOutput(this, 'ApiDomainName', { value: domain.apiDomainName });
  }
}
