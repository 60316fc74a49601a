/**
 * What several jest specs start from: the server configs forms are built against (one user's
 * local backend; a cluster with teams, queues, images and nodes of GPUs), and the server's
 * field errors written as a table.
 */
import { IConfig, IFieldError } from '../models';

export const localConfig: IConfig = {
  backend: 'local',
  features: ['gpus', 'priority'],
  images: [],
  teams: [],
  limits: { max_workers: 1, max_processes_per_worker: 8, max_gpus_per_worker: 0 },
  user: 'alice',
  allow_pip: false
};

export const clusterConfig: IConfig = {
  ...localConfig,
  backend: 'kubernetes',
  features: ['gpus', 'priority', 'multi_node', 'queues', 'images'],
  images: [{ name: 'pytorch-2.4', image: 'registry/pytorch:2.4', description: 'PyTorch' }],
  teams: [{ name: 'vision', queues: ['vision-default', 'vision-long'] }],
  limits: { max_workers: 8, max_processes_per_worker: 8, max_gpus_per_worker: 8 }
};

/** The server's messages, by field, as it sends them (in this order). */
export function fieldErrors(byField: Record<string, string>): IFieldError[] {
  return Object.entries(byField).map(([field, message]) => ({ field, message }));
}
