import type { CfnStage, HttpRoute, HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { routeKeyOf, trafficClassOf } from '../platform/edge.ts';
import type { Route } from '../platform/routes.ts';
import type { Throttle } from './edge-config.ts';

/**
 * Route settings on the HTTP API stage: each keyless route gets its traffic class's throttle
 * (`StageConfig.edge.routeThrottles`), the keyed routes keep the stage's default, so a flood of the
 * docs or their assets is throttled on those routes alone. Route-level settings override the
 * stage's for their route (docs.aws.amazon.com/apigateway/latest/developerguide/http-api-throttling.html,
 * read 2026-11-27). CloudFormation rejects a route setting whose route does not exist yet, so the
 * stage waits for the routes.
 */
export const applyRouteThrottles = (
  stage: HttpStage,
  routes: readonly { route: Route; created: readonly HttpRoute[] }[],
  throttles: Record<'anonymous' | 'signed', Throttle>,
): void => {
  const settings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
  for (const { route, created } of routes) {
    const trafficClass = trafficClassOf(route);
    if (trafficClass === 'keyed') continue;
    const throttle = throttles[trafficClass];
    settings[routeKeyOf(route)] = {
      ThrottlingRateLimit: throttle.rateLimit,
      ThrottlingBurstLimit: throttle.burstLimit,
    };
    for (const httpRoute of created) stage.node.addDependency(httpRoute);
  }
  (stage.node.defaultChild as CfnStage).addPropertyOverride('RouteSettings', settings);
};
