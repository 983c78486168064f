// Bounds on the work one command does, kept in a module without imports so the CLI's option parsers can read
// them without loading the search.

/**
 * Largest deployment planned (512 nodes of 8; --total-gpus and --max-gpus above it are refused): the results
 * directory writes a run script per node, so an absurd budget or target would write hundreds of thousands of files.
 */
export const MAX_DEPLOYMENT_GPUS = 4096;
