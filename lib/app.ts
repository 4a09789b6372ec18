/** The CDK app entry (`cdk.json` runs `node lib/app.ts`). */
import { buildApp } from './build-app.ts';

buildApp().app.synth();
