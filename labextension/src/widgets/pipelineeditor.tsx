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
import { IConfig, IFieldError } from '../models';
import { errorsByStep, localChecks, mergeErrors } from '../pipelinechecks';
import { PipelineDocument } from '../pipelinedocument';
import { checkPipeline, IRunSummary, listRuns, runsOfFile, startRun } from '../pipelineruns';
import { ApiError } from '../request';
import { handleFileDrag, listenForDrags, stopListeningForDrags } from './notebookdrop';
import { PipelineCanvas } from './pipelinecanvas';
import { RunsList } from './pipelinerunslist';
import { StepForm } from './pipelinestepform';
import { PipelineToolbar } from './pipelinetoolbar';

export const PIPELINE_FACTORY = 'Pipeline Editor';
export const PIPELINE_FILE_TYPE = 'trainhub-pipeline';

/** What the editor asks of the rest of the extension. */
export interface IPipelineEditorHost {
  api: TrainHubAPI;
  settings: ServerConnection.ISettings;
  config: () => Promise<IConfig>;
  openRun: (runId: string) => void;
  compareRuns: (ids: string[]) => void;
  openNotebook: (path: string) => void;
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
        <PipelineToolbar
          busy={this.busy}
          mistakes={local.length}
          showRuns={this.showRuns}
          message={this.message}
          save={() => void this.context.save()}
          check={() => void this.ask('check')}
          run={() => void this.ask('run')}
          toggleRuns={() => {
            this.showRuns = !this.showRuns;
            if (this.showRuns) {
              void this.loadRuns();
            }
            this.update();
          }}
        />
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
    listenForDrags(this.node, this);
  }

  protected onBeforeDetach(msg: Message): void {
    stopListeningForDrags(this.node, this);
    super.onBeforeDetach(msg);
  }

  /** Lumino's drag events (the file browser's drag of files). */
  handleEvent(event: Event): void {
    handleFileDrag(this.node, event, paths => this.addNotebooks(paths));
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
