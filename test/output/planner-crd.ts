// CRD schema checks for the planner tests: ajv over one version's openAPIV3Schema, as
// test/output/manifests.test.ts checks k8s_deploy.yaml (which can import crdValidator from here).
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import YAML from 'yaml';
import { referencePath } from '../../src/util/paths.js';

export const DGD_CRD = referencePath('dynamo-crds', 'nvidia.com_dynamographdeployments.yaml');
/** The 1.5.0 development line's DGD CRD: serves v1alpha1 (deprecated) and v1beta1. */
export const DGD_CRD_V1BETA1 = referencePath('dynamo-crds', 'v1beta1', 'nvidia.com_dynamographdeployments.yaml');
export const DGDR_CRD = referencePath('dynamo-crds', 'nvidia.com_dynamographdeploymentrequests.yaml');
export const DGDR_CRD_V1BETA1 = referencePath('dynamo-crds', 'v1beta1', 'nvidia.com_dynamographdeploymentrequests.yaml');

/** A schema validator for one version of a CRD file. */
export function crdValidator(file: string, version: string): ValidateFunction {
  const crd = YAML.parse(readFileSync(file, 'utf8'));
  const schema = crd.spec.versions.find((v: { name: string }) => v.name === version).schema.openAPIV3Schema;
  const ajv = new Ajv({ strict: false, allErrors: true });
  for (const f of ['int32', 'int64', 'date-time', 'byte', 'double', 'float']) ajv.addFormat(f, true);
  return ajv.compile(schema);
}
