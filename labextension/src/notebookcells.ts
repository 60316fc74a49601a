/** Source of the cells trainhub inserts into notebooks. */
import { ICheckpointInfo } from './models';

/**
 * The code cell "load into notebook" inserts. Strings are written with JSON syntax, which is
 * valid Python for any path (quotes, backslashes and newlines come out escaped).
 */
export function loadCheckpointSource(checkpoint: ICheckpointInfo, jobName: string): string {
  return [
    `# Checkpoint of job ${JSON.stringify(jobName).slice(1, -1)}, step ${checkpoint.step}`,
    'import trainhub.checkpoint',
    '',
    `state = trainhub.checkpoint.load(${JSON.stringify(checkpoint.path)})`,
    'list(state) if isinstance(state, dict) else type(state)'
  ].join('\n');
}
