/**
 * The pipeline editor: a `*.pipeline.yaml` as a canvas (the default way to open one, as Elyra
 * opens a `.pipeline`; "Open With > Editor" shows its text). Notebooks dragged from the file
 * browser become steps, a drag from a step's output port to another step makes it run after,
 * the selected step's parameters and resources are set in the submit dialog's own fields, and
 * every change is written to the document's one model, so a text editor open on the same file
 * follows it (and the canvas follows the text editor). Check and Run ask the server, whose
 * mistakes show on their steps; Runs lists this file's runs.
 */
import { DocumentRegistry, DocumentWidget, ABCWidgetFactory } from '@jupyterlab/docregistry';
import { ReactWidget } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { formatTime } from '../format';
import { IConfig, IFieldError } from '../models';
import { IParameter, parameterErrors } from '../parameters';
import { formChanges, stepFormErrors, stepToForm } from '../pipelineform';
import {
  errorsByStep,
  IStepNode,
  localChecks,
  mergeErrors,
  PipelineDocument
} from '../pipelinegraph';
import {
  checkPipeline,
  IRunSummary,
  listRuns,
  runDuration,
  runOutcome,
  runsOfFile,
  startRun
} from '../pipelineruns';
import { ApiError } from '../request';
import { notebookParametersOf } from '../rerun';
import { ISubmitForm } from '../specform';
import { CellsAndParameters } from './cellsandparameters';
import { FieldErrors } from './formrow';
import { PipelineCanvas } from './pipelinecanvas';
import { ResourceFields } from './resourcefields';

export const PIPELINE_FACTORY = 'Pipeline Editor';
export const PIPELINE_FILE_TYPE = 'trainhub-pipeline';
/** The MIME type of the file browser's drag (its paths, root-relative). */
const CONTENTS_MIME = 'application/x-jupyter-icontents';

/** What the editor asks of the rest of the extension. */
export interface IPipelineEditorHost {
  api: TrainHubAPI;
  settings: ServerConnection.ISettings;
  config: () => Promise<IConfig>;
  openRun: (runId: string) => void;
  compareRuns: (ids: string[]) => void;
  openNotebook: (path: string) => void;
}

/** The side form of the selected step: the submit dialog's fields, written back as changed. */
function StepForm(props: {
  host: IPipelineEditorHost;
  config: IConfig;
  step: IStepNode;
  errors: IFieldError[];
  write: (changes: [string[], unknown][]) => void;
  remove: () => void;
  rename: (name: string) => string | null;
}): JSX.Element {
  const { host, config, step } = props;
  const [parameters, setParameters] = React.useState<IParameter[] | null>(null);
  const [form, setForm] = React.useState<ISubmitForm | null>(null);
  const [name, setName] = React.useState(step.name);
  const [nameError, setNameError] = React.useState('');
  React.useEffect(() => {
    let live = true;
    void notebookParametersOf(host.api, step.notebook).then(found => {
      if (live) {
        setParameters(found);
        setForm(stepToForm(step, config, found));
      }
    });
    return () => {
      live = false;
    };
  }, [step.notebook]);
  if (!form || !parameters) {
    return <div className="jp-trainhub-pipeline-form">Reading {step.notebook}…</div>;
  }
  const defaults = Object.fromEntries(parameters.map(p => [p.name, p.text]));
  const typeErrors = parameterErrors(parameters, form.parameters);
  const errors = stepFormErrors(props.errors);
  if (Object.keys(typeErrors).length) {
    errors.parameters = [
      ...(errors.parameters ?? []),
      ...Object.entries(typeErrors).map(([k, e]) => `${k}: ${e}`)
    ];
  }
  const update = (patch: Partial<ISubmitForm>) => {
    const next = { ...form, ...patch };
    const bad = Object.keys(parameterErrors(parameters, next.parameters)).length > 0;
    const changes = formChanges(form, next, config, defaults).filter(
      ([path]) => !(bad && path[0] === 'parameters')
    );
    setForm(next);
    if (changes.length) {
      props.write(changes);
    }
  };
  return (
    <form
      className="jp-trainhub-pipeline-form jp-trainhub-submit-form"
      data-step={step.name}
      onSubmit={e => e.preventDefault()}
    >
      <h3>Step</h3>
      <label className="jp-trainhub-form-row">
        <span className="jp-trainhub-form-label">Name</span>
        <span className="jp-trainhub-form-control">
          <input
            className="jp-mod-styled"
            name="step-name"
            value={name}
            onChange={e => setName(e.target.value)}
            onBlur={() => {
              if (name !== step.name) {
                const refused = props.rename(name);
                setNameError(refused ?? '');
              }
            }}
          />
          {nameError ? <FieldErrors errors={[nameError]} id="trainhub-step-name-error" /> : null}
        </span>
      </label>
      <div className="jp-trainhub-form-row">
        <span className="jp-trainhub-form-label">Notebook</span>
        <span className="jp-trainhub-form-control">
          <button
            type="button"
            className="jp-trainhub-link jp-trainhub-mono"
            onClick={() => host.openNotebook(step.notebook)}
          >
            {step.notebook}
          </button>
        </span>
      </div>
      {step.outputs.length || Object.keys(step.inputs).length ? (
        <div className="jp-trainhub-form-hint">
          {Object.keys(step.inputs).length
            ? `inputs: ${Object.entries(step.inputs)
                .map(([k, v]) => `${k} ← ${v}`)
                .join(', ')}. `
            : ''}
          {step.outputs.length ? `outputs: ${step.outputs.join(', ')}` : ''}
        </div>
      ) : null}
      <CellsAndParameters
        parameters={parameters}
        form={form}
        errors={errors}
        typeErrors={typeErrors}
        update={update}
      />
      <ResourceFields api={host.api} config={config} form={form} errors={errors} update={update} />
      <FieldErrors errors={errors.general} id="trainhub-step-errors" />
      <button
        type="button"
        className="jp-mod-styled jp-mod-warn jp-trainhub-pipeline-remove"
        onClick={props.remove}
      >
        Remove step
      </button>
    </form>
  );
}

function RunsList(props: {
  runs: IRunSummary[] | null;
  error: string;
  openRun: (id: string) => void;
  compare: (ids: string[]) => void;
}): JSX.Element {
  const now = Date.now() / 1000;
  const [picked, setPicked] = React.useState<string[]>([]);
  const pick = (id: string, on: boolean) =>
    setPicked(p => (on ? [...p.filter(x => x !== id), id].slice(-2) : p.filter(x => x !== id)));
  if (!props.runs) {
    return <div className="jp-trainhub-pipeline-runs">{props.error || 'Loading runs…'}</div>;
  }
  return (
    <div className="jp-trainhub-pipeline-runs">
      <h3>
        Runs of this pipeline{' '}
        <button
          type="button"
          className="jp-mod-styled jp-trainhub-pipeline-compare-runs"
          disabled={picked.length !== 2}
          title="Pick two runs to compare them step by step"
          onClick={() =>
            // the older run first: the list is newest first
            props.compare(
              (props.runs ?? [])
                .filter(r => picked.includes(r.id))
                .map(r => r.id)
                .reverse()
            )
          }
        >
          Compare two runs
        </button>
      </h3>
      {props.runs.length ? (
        <table className="jp-trainhub-pipeline-runs-table">
          <thead>
            <tr>
              <th aria-label="pick" />
              <th>run</th>
              <th>started</th>
              <th>duration</th>
              <th>outcome</th>
              <th>reused</th>
            </tr>
          </thead>
          <tbody>
            {props.runs.map(r => (
              <tr key={r.id} data-run={r.id} data-state={r.state}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`pick run ${r.id}`}
                    checked={picked.includes(r.id)}
                    onChange={e => pick(r.id, e.target.checked)}
                  />
                </td>
                <td>
                  <button
                    type="button"
                    className="jp-trainhub-link jp-trainhub-mono"
                    onClick={() => props.openRun(r.id)}
                  >
                    {r.id}
                  </button>
                </td>
                <td>{formatTime(r.created_at)}</td>
                <td>{runDuration(r, now)}</td>
                <td>
                  <span className={`jp-trainhub-state jp-trainhub-state-${r.state}`}>
                    {runOutcome(r)}
                  </span>
                </td>
                <td>{r.reused.join(', ') || '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <div className="jp-trainhub-muted">No run yet.</div>
      )}
    </div>
  );
}

type Context = DocumentRegistry.IContext<DocumentRegistry.ICodeModel>;

export class PipelineEditorBody extends ReactWidget {
  pipeline = new PipelineDocument('');
  selected: string | null = null;
  /** The server's mistakes from the last Check or Run (cleared by an edit). */
  serverErrors: IFieldError[] = [];
  message = '';
  busy = false;
  config: IConfig | null = null;
  runs: IRunSummary[] | null = null;
  runsError = '';
  showRuns = false;
  /** Bumped when the text changed under the canvas (the text editor): the side form rereads. */
  private version = 0;
  private written = '';

  constructor(
    private readonly context: Context,
    private readonly host: IPipelineEditorHost
  ) {
    super();
    this.addClass('jp-trainhub-pipeline-editor');
    void context.ready.then(() => {
      this.reread();
      context.model.contentChanged.connect(() => this.reread());
    });
    void host.config().then(
      c => {
        this.config = c;
        this.update();
      },
      () => undefined
    );
  }

  private reread(): void {
    const text = this.context.model.toString();
    if (text === this.written) {
      return;
    }
    this.written = text;
    this.pipeline = new PipelineDocument(text);
    this.version++;
    if (this.selected && !this.pipeline.stepNames().includes(this.selected)) {
      this.selected = null;
    }
    this.update();
  }

  /** Change the pipeline and write it to the model (the text editor's too). */
  edit(change: (p: PipelineDocument) => string | null | void): void {
    if (!this.pipeline.ok) {
      this.message = 'The file is not valid YAML: fix it in the text editor first.';
      this.update();
      return;
    }
    const refused = change(this.pipeline);
    if (typeof refused === 'string') {
      this.message = refused;
    } else {
      this.message = '';
      this.serverErrors = [];
    }
    const text = this.pipeline.toString();
    if (text !== this.written) {
      this.written = text;
      this.context.model.fromString(text);
    }
    this.update();
  }

  /** Notebooks dropped on the canvas: a step each, after the selected step if there is one. */
  addNotebooks(paths: string[]): void {
    const notebooks = paths.filter(p => p.endsWith('.ipynb'));
    if (!notebooks.length) {
      this.message = 'Only notebooks (.ipynb) become steps.';
      this.update();
      return;
    }
    this.edit(p => {
      for (const path of notebooks) {
        this.selected = p.addStep(path);
      }
    });
  }

  private async saved(): Promise<void> {
    if (this.context.model.dirty) {
      await this.context.save();
    }
  }

  private async ask(what: 'check' | 'run'): Promise<void> {
    this.busy = true;
    this.message = what === 'check' ? 'Checking…' : 'Starting a run…';
    this.update();
    try {
      await this.saved();
      if (what === 'check') {
        await checkPipeline(this.host.settings, this.context.path);
        this.message = `No mistakes: ${this.pipeline.stepNames().length} steps, ready to run.`;
      } else {
        const run = await startRun(this.host.settings, this.context.path);
        this.message = `Run ${run.id} started.`;
        this.host.openRun(run.id);
        if (this.showRuns) {
          void this.loadRuns();
        }
      }
      this.serverErrors = [];
    } catch (e) {
      const error = e as Error;
      this.serverErrors =
        e instanceof ApiError && e.fieldErrors.length
          ? e.fieldErrors
          : [{ field: 'pipeline', message: error.message ?? String(e) }];
      const n = this.serverErrors.length;
      this.message =
        what === 'check'
          ? `${n} ${n === 1 ? 'mistake' : 'mistakes'} found`
          : `Not started: ${n} ${n === 1 ? 'mistake' : 'mistakes'}`;
    }
    this.busy = false;
    this.update();
  }

  async loadRuns(): Promise<void> {
    try {
      this.runs = runsOfFile((await listRuns(this.host.settings)).runs, this.context.path);
      this.runsError = '';
    } catch (e) {
      this.runsError = (e as Error).message ?? String(e);
    }
    this.update();
  }

  render(): JSX.Element {
    const p = this.pipeline;
    const names = p.stepNames();
    const local = localChecks(p);
    const errors = errorsByStep(mergeErrors(local, this.serverErrors), names);
    const selected = this.selected ? p.step(this.selected) : undefined;
    const general = errors[''] ?? [];
    return (
      <div className="jp-trainhub-pipeline">
        <div className="jp-trainhub-pipeline-toolbar">
          <button
            type="button"
            className="jp-mod-styled"
            disabled={this.busy}
            onClick={() => void this.context.save()}
          >
            Save
          </button>
          <button
            type="button"
            className="jp-mod-styled jp-trainhub-pipeline-check"
            disabled={this.busy}
            onClick={() => void this.ask('check')}
          >
            Check
          </button>
          <button
            type="button"
            className="jp-mod-styled jp-mod-accept jp-trainhub-pipeline-run"
            disabled={this.busy || local.length > 0}
            title={local.length ? 'Fix the mistakes first' : 'Save and start a run'}
            onClick={() => void this.ask('run')}
          >
            Run
          </button>
          <button
            type="button"
            className="jp-mod-styled jp-trainhub-pipeline-runs-toggle"
            aria-pressed={this.showRuns}
            onClick={() => {
              this.showRuns = !this.showRuns;
              if (this.showRuns) {
                void this.loadRuns();
              }
              this.update();
            }}
          >
            Runs
          </button>
          <span className="jp-trainhub-pipeline-message" role="status">
            {this.message}
          </span>
        </div>
        {general.length ? (
          <div className="jp-trainhub-error jp-trainhub-pipeline-errors">
            {general.map((e, i) => (
              <div key={i}>
                {e.field}: {e.message}
              </div>
            ))}
          </div>
        ) : null}
        <div className="jp-trainhub-pipeline-main">
          <PipelineCanvas
            names={names}
            edges={p.edges()}
            selected={this.selected}
            info={name => {
              const s = p.step(name)!;
              const stepErrors = (errors[name] ?? []).map(e => `${e.field}: ${e.message}`);
              return { subtitle: s.notebook || '(no notebook)', errors: stepErrors };
            }}
            onSelect={name => {
              this.selected = name;
              this.update();
            }}
            onConnect={(from, to) => this.edit(doc => doc.connect(from, to))}
            onDisconnect={(from, to) => this.edit(doc => doc.disconnect(from, to))}
            onRemove={name => {
              this.edit(doc => doc.removeStep(name));
              this.selected = null;
              this.update();
            }}
            onOpen={name => {
              const nb = p.step(name)?.notebook;
              if (nb) {
                this.host.openNotebook(nb);
              }
            }}
            empty={
              <span className="jp-trainhub-muted">
                Drag notebooks here from the file browser: each becomes a step.
              </span>
            }
          />
          {selected && this.config ? (
            <StepForm
              key={`${selected.name}:${this.version}`}
              host={this.host}
              config={this.config}
              step={selected}
              errors={errors[selected.name] ?? []}
              write={changes =>
                this.edit(doc => {
                  for (const [path, value] of changes) {
                    doc.setStepField(selected.name, path, value);
                  }
                })
              }
              remove={() => {
                this.edit(doc => doc.removeStep(selected.name));
                this.selected = null;
                this.update();
              }}
              rename={name => {
                let refused: string | null = null;
                this.edit(doc => {
                  refused = doc.renameStep(selected.name, name);
                  if (!refused) {
                    this.selected = name;
                  }
                  return refused;
                });
                return refused;
              }}
            />
          ) : null}
        </div>
        {this.showRuns ? (
          <RunsList
            runs={this.runs}
            error={this.runsError}
            openRun={this.host.openRun}
            compare={this.host.compareRuns}
          />
        ) : null}
      </div>
    );
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    for (const type of ['lm-dragenter', 'lm-dragleave', 'lm-dragover', 'lm-drop']) {
      this.node.addEventListener(type, this);
    }
  }

  protected onBeforeDetach(msg: Message): void {
    for (const type of ['lm-dragenter', 'lm-dragleave', 'lm-dragover', 'lm-drop']) {
      this.node.removeEventListener(type, this);
    }
    super.onBeforeDetach(msg);
  }

  /** Lumino's drag events (the file browser's drag of files). */
  handleEvent(event: Event): void {
    const drag = event as Event & {
      mimeData?: { hasData(mime: string): boolean; getData(mime: string): unknown };
      proposedAction?: string;
      dropAction?: string;
    };
    if (!drag.mimeData?.hasData(CONTENTS_MIME)) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    switch (event.type) {
      case 'lm-dragenter':
      case 'lm-dragover':
        this.node.classList.add('jp-mod-dropTarget');
        // The file browser offers a move: taken as is, though the file stays where it is.
        drag.dropAction = drag.proposedAction ?? 'move';
        break;
      case 'lm-dragleave':
        this.node.classList.remove('jp-mod-dropTarget');
        break;
      case 'lm-drop': {
        this.node.classList.remove('jp-mod-dropTarget');
        drag.dropAction = drag.proposedAction ?? 'move';
        const paths = drag.mimeData.getData(CONTENTS_MIME);
        this.addNotebooks(Array.isArray(paths) ? paths.map(String) : [String(paths)]);
        break;
      }
    }
  }
}

export class PipelineEditor extends DocumentWidget<
  PipelineEditorBody,
  DocumentRegistry.ICodeModel
> {}

export class PipelineEditorFactory extends ABCWidgetFactory<
  PipelineEditor,
  DocumentRegistry.ICodeModel
> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<PipelineEditor>,
    private readonly host: IPipelineEditorHost
  ) {
    super(options);
  }

  protected createNewWidget(context: Context): PipelineEditor {
    const content = new PipelineEditorBody(context, this.host);
    const widget = new PipelineEditor({ context, content });
    widget.addClass('jp-trainhub-pipeline-document');
    return widget;
  }
}
