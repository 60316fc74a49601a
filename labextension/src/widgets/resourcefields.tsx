/**
 * Where and on what a job runs, in the submit dialog: image, datasets, workers, processes,
 * GPUs (or a share of one where the team's pools offer shares), CPU and memory, team, queue, priority and the runtime limit; only what the backend
 * supports is offered.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { IConfig, IDatasetInfo, Priority } from '../models';
import { has, ISubmitForm, sharePatch, sharesOffered } from '../specform';
import { Errors, Row } from './formrow';

/** The datasets the user's team may read, once (none when the backend has no datasets). */
function useDatasets(api: TrainHubAPI, wanted: boolean): IDatasetInfo[] {
  const [datasets, setDatasets] = React.useState<IDatasetInfo[]>([]);
  React.useEffect(() => {
    if (!wanted) {
      return;
    }
    let live = true;
    api.datasets().then(
      answer => live && setDatasets(answer.datasets),
      () => live && setDatasets([]) // the dialog still submits; a name typed elsewhere is checked
    );
    return () => {
      live = false;
    };
  }, [api, wanted]);
  return datasets;
}

/** Where the chosen datasets appear to the ranks, or how to choose several. */
function datasetHint(offered: IDatasetInfo[], chosen: string[]): string {
  const picked = offered.filter(d => chosen.includes(d.name));
  if (!picked.length) {
    return 'Only the datasets your team may read; Ctrl or Shift to choose several';
  }
  return picked.map(d => `${d.name} at ${d.path} (read-only)`).join('; ');
}

const PRIORITIES: Priority[] = ['low', 'normal', 'high'];

export function ResourceFields(props: {
  api: TrainHubAPI;
  config: IConfig;
  form: ISubmitForm;
  errors: Errors;
  update: (patch: Partial<ISubmitForm>) => void;
}): JSX.Element {
  const { api, config, form, errors, update } = props;
  const limits = config.limits;
  const team = config.teams.find(t => t.name === form.team);
  const offered = useDatasets(api, has(config, 'datasets'));
  const shares = sharesOffered(config, form.team);
  const chosen = shares.find(s => s.share === form.gpuShare);
  const set = (field: keyof ISubmitForm) => (value: string) =>
    update({ [field]: value } as Partial<ISubmitForm>);
  const input = (field: keyof ISubmitForm, more: React.InputHTMLAttributes<HTMLInputElement>) => (
    <input
      className="jp-mod-styled"
      name={field}
      value={form[field] as string}
      onChange={e => set(field)(e.target.value)}
      {...more}
    />
  );
  const number = (field: keyof ISubmitForm, max: number, min = 0) =>
    input(field, { type: 'number', min, max });
  const choice = (field: keyof ISubmitForm, values: string[], onChange = set(field)) => (
    <select
      className="jp-mod-styled"
      name={field}
      value={form[field] as string}
      onChange={e => onChange(e.target.value)}
    >
      {values.map(v => (
        <option key={v} value={v}>
          {v}
        </option>
      ))}
    </select>
  );
  return (
    <>
      {config.images.length ? (
        <Row
          label="Image"
          field="image"
          errors={errors}
          hint={config.images.find(i => i.name === form.image)?.description}
        >
          {choice(
            'image',
            config.images.map(i => i.name)
          )}
        </Row>
      ) : null}
      {offered.length ? (
        <Row
          label="Datasets"
          field="datasets"
          errors={errors}
          hint={datasetHint(offered, form.datasets)}
        >
          <select
            className="jp-mod-styled jp-trainhub-datasets"
            name="datasets"
            multiple
            size={Math.min(offered.length, 5)}
            value={form.datasets}
            onChange={e => update({ datasets: Array.from(e.target.selectedOptions, o => o.value) })}
          >
            {offered.map(d => (
              <option key={d.name} value={d.name} title={d.description}>
                {d.name}
              </option>
            ))}
          </select>
        </Row>
      ) : null}
      {has(config, 'multi_node') && limits.max_workers > 1 ? (
        <Row
          label="Workers (nodes)"
          field="workers"
          errors={errors}
          hint={`a number, or MIN:MAX (e.g. 1:${limits.max_workers}) for an elastic job that starts with MIN and grows toward MAX`}
        >
          {input('workers', { inputMode: 'numeric', placeholder: '1' })}
        </Row>
      ) : null}
      <Row label="Processes per worker" field="processesPerWorker" errors={errors}>
        {number('processesPerWorker', limits.max_processes_per_worker, 1)}
      </Row>
      {shares.length || form.gpuShare ? (
        <Row
          label="GPU share"
          field="gpuShare"
          errors={errors}
          hint={
            chosen
              ? `One worker, on pool ${chosen.queue}`
              : form.gpuShare
                ? `No pool of team ${form.team} offers ${form.gpuShare} of a GPU`
                : 'Whole GPUs, or a share of one GPU your team’s pools offer'
          }
        >
          <select
            className="jp-mod-styled"
            name="gpuShare"
            value={form.gpuShare}
            onChange={e => update(sharePatch(config, form, e.target.value))}
          >
            <option value="">whole GPUs</option>
            {form.gpuShare && !chosen ? (
              <option value={form.gpuShare}>{form.gpuShare} of a GPU</option>
            ) : null}
            {shares.map(s => (
              <option key={s.share} value={s.share}>
                {s.label}
              </option>
            ))}
          </select>
        </Row>
      ) : null}
      {has(config, 'gpus') && limits.max_gpus_per_worker > 0 && !form.gpuShare ? (
        <Row label="GPUs per worker" field="gpusPerWorker" errors={errors}>
          {number('gpusPerWorker', limits.max_gpus_per_worker)}
        </Row>
      ) : null}
      {has(config, 'worker_resources') ? (
        <>
          <Row
            label="CPU per worker"
            field="cpuPerWorker"
            errors={errors}
            hint="cores, e.g. 0.5 or 8"
          >
            {input('cpuPerWorker', { inputMode: 'decimal', placeholder: 'one per process' })}
          </Row>
          <Row
            label="Memory per worker"
            field="memoryPerWorker"
            errors={errors}
            hint="e.g. 1500Mi or 32Gi"
          >
            {input('memoryPerWorker', { placeholder: 'default' })}
          </Row>
        </>
      ) : null}
      {config.teams.length ? (
        <Row label="Team" field="team" errors={errors}>
          {choice(
            'team',
            config.teams.map(t => t.name),
            name => {
              const t = config.teams.find(x => x.name === name);
              update({ team: name, queue: t?.queues[0] ?? '', gpuShare: '' });
            }
          )}
        </Row>
      ) : null}
      {has(config, 'queues') && team && team.queues.length ? (
        <Row label="Queue" field="queue" errors={errors}>
          {choice('queue', team.queues)}
        </Row>
      ) : null}
      {has(config, 'priority') ? (
        <Row label="Priority" field="priority" errors={errors}>
          {choice('priority', PRIORITIES)}
        </Row>
      ) : null}
      <Row label="Max runtime" field="maxRuntime" errors={errors} hint="e.g. 90m, 2h, 1d12h">
        {input('maxRuntime', { placeholder: 'no limit' })}
      </Row>
    </>
  );
}
