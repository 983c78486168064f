// k8s_bench.yaml: a Kubernetes Job that runs AIPerf against the deployment's frontend at the predicted
// concurrency and the plan's ISL / OSL, so the prediction can be checked where it is served. The script is
// templates/k8s-bench.sh.tmpl; its results are copied next to the plan for `configure validate --plan`.
import { clusterOf, inNamespace, renderDocuments } from './k8s.js';
import { k8sName, safeSegment } from './naming.js';
import { derivePlan, imageOf, type PlanInput } from './plan.js';
import { shQuote } from './scripts.js';
import { renderTemplate } from './templates.js';

/** Where the Job writes on the model-cache volume, below the mount point. */
export const BENCH_RESULTS_DIR = 'inferplan-bench';
/** The HTTP port of the Dynamo frontend's Service (`<graph name>-frontend`). */
export const FRONTEND_PORT = 8000;

/** The script the Job runs, every value shell-quoted. */
export function buildK8sBenchScript(p: PlanInput): string {
  const plan = derivePlan(p);
  return renderTemplate('k8s-bench.sh.tmpl', {
    deployment: k8sName(plan.modelId, plan.mode),
    concurrencies: shQuote(String(plan.concurrency)),
    synthetic_isl: shQuote(String(plan.isl - plan.prefix)),
    osl: shQuote(String(plan.osl)),
    min_tokens: shQuote(`min_tokens:${plan.osl}`),
    has_prefix: plan.prefix > 0,
    prefix: shQuote(String(plan.prefix)),
  });
}

/** The Job as a plain object. */
export function benchJobDocument(p: PlanInput): Record<string, unknown> {
  const plan = derivePlan(p);
  const cluster = clusterOf(p);
  const name = k8sName(plan.modelId, plan.mode);
  const results = `${cluster.mountPath}/${BENCH_RESULTS_DIR}/${name}/${safeSegment(plan.parallel)}`;
  const env: Array<Record<string, unknown>> = [
    { name: 'URL', value: `http://${name}-frontend:${FRONTEND_PORT}` },
    { name: 'MODEL', value: cluster.servedModelName },
    // The tokenizer files sit with the weights in the volume, or come from the Hub into HF_HOME.
    { name: 'TOKENIZER', value: cluster.modelArg },
    { name: 'HF_HOME', value: cluster.mountPath },
    { name: 'RESULTS', value: results },
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  ];
  const container: Record<string, unknown> = {
    name: 'aiperf',
    image: imageOf(plan, 'frontend'),
    command: ['bash', '-c', buildK8sBenchScript(p)],
    env,
  };
  // Optional: a public model's tokenizer needs no token.
  if (cluster.hfTokenSecret !== undefined) container.envFrom = [{ secretRef: { name: cluster.hfTokenSecret, optional: true } }];
  container.volumeMounts = [{ name: 'model-cache', mountPath: cluster.mountPath }];
  const podSpec: Record<string, unknown> = { restartPolicy: 'Never' };
  if (cluster.imagePullSecret !== undefined) podSpec.imagePullSecrets = [{ name: cluster.imagePullSecret }];
  podSpec.containers = [container];
  podSpec.volumes = [{ name: 'model-cache', persistentVolumeClaim: { claimName: cluster.modelCachePvc } }];
  const job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: `${name}-bench`,
      annotations: {
        'inferplan/plan': `${plan.mode} ${plan.parallel}; predicted concurrency ${plan.concurrency}, isl ${plan.isl}, osl ${plan.osl}`,
      },
    },
    spec: { backoffLimit: 0, template: { metadata: { labels: { 'inferplan/bench': name } }, spec: podSpec } },
  };
  return inNamespace(job, cluster.namespace);
}

/** k8s_bench.yaml text: how to run it and fetch the results, then the Job. */
export function buildBenchJob(p: PlanInput): string {
  const plan = derivePlan(p);
  const cluster = clusterOf(p);
  const name = k8sName(plan.modelId, plan.mode);
  const ns = cluster.namespace !== undefined ? ` -n ${cluster.namespace}` : '';
  const header = [
    `# AIPerf against ${name} (k8s_deploy.yaml beside this file) at the predicted concurrency and the plan's ISL / OSL.`,
    `#   kubectl apply${ns} -f k8s_deploy.yaml && kubectl apply${ns} -f k8s_bench.yaml`,
    `#   kubectl logs${ns} -f job/${name}-bench          # ends with the kubectl cp line that fetches the results`,
    `#   kubectl cp${ns} <pod>:<results> bench              # run in this folder; then: configure validate --plan generator_config.yaml`,
    `# Delete the Job (kubectl delete${ns} job/${name}-bench) before running it again.`,
  ];
  return `${header.join('\n')}\n${renderDocuments([benchJobDocument(p)])}`;
}
