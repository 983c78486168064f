// Placeholder until `configure perf compare` lands.
import type { Command } from 'commander';

export function registerPerfCompare(_perf: Command): void {}
