// Public surface of the results-directory writer and the artifact builders.
export { writeResultsDir, buildResultsTree, cleanReport, stripTiming, type ResultsDirOptions, type TreeFile } from './results-dir.js';
export { buildGeneratorConfig, generatorConfigObject, generatorConfigSchema, parseGeneratorConfig, type GeneratorConfig } from './generator-config.js';
export { buildDeployManifest, buildEngineConfigs, deployDocuments } from './k8s.js';
export { buildRunScripts, buildBenchScript, benchConcurrencies, shQuote } from './scripts.js';
export { buildExpConfig, experimentFileSchema, parseExperimentFile, type Experiment, type ExperimentFile } from './exp-config.js';
export { renderParetoChart, buildParetoSpec } from './chart.js';
export { buildCandidatesCsv, AGG_COLUMNS, DISAGG_COLUMNS } from './csv.js';
export { resultsSlug, safeSegment, k8sName } from './naming.js';
export { runtimeImage, parseDynamoVersion, DYNAMO_RUNTIME_TABLE, type DynamoProfile, type ImageChoice } from './images.js';
export { derivePlan, type PlanInput, type DeployPlan } from './plan.js';
