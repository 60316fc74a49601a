/**
 * Pipelines in JupyterLab: the `*.pipeline.yaml` file type, its canvas (the Pipeline Editor,
 * the default way to open one; "Open With > Editor" shows the text of the same document) and
 * the run graph's command.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IDocumentManager } from '@jupyterlab/docmanager';

import { TrainHubAPI } from './api';
import { CommandIDs, trainhubIcon } from './commandids';
import { IConfig } from './models';
import {
  IPipelineEditorHost,
  PIPELINE_FACTORY,
  PIPELINE_FILE_TYPE,
  PipelineEditorFactory
} from './widgets/pipelineeditor';
import { OPEN_PIPELINE_RUN_COMMAND, PipelineRunView } from './widgets/pipelinerunview';

export const pipelinePlugin: JupyterFrontEndPlugin<void> = {
  id: 'trainhub:pipelines',
  description: 'Draw a pipeline of notebooks, run it, and follow its runs as graphs.',
  autoStart: true,
  requires: [IDocumentManager],
  activate: (app: JupyterFrontEnd, docManager: IDocumentManager) => {
    const settings = app.serviceManager.serverSettings;
    const api = new TrainHubAPI(settings);
    let configPromise: Promise<IConfig> | null = null;

    const runs = new Map<string, PipelineRunView>();
    app.commands.addCommand(OPEN_PIPELINE_RUN_COMMAND, {
      label: args => (typeof args.runId === 'string' ? `Pipeline run ${args.runId}` : 'Open run'),
      caption: "A pipeline run's graph, each step's state live",
      execute: args => {
        const runId = String(args.runId ?? '');
        if (!runId) {
          throw new Error(`${OPEN_PIPELINE_RUN_COMMAND} needs {runId}`);
        }
        let view = runs.get(runId);
        if (!view || view.isDisposed) {
          const openJob = (id: string) => void app.commands.execute(CommandIDs.openJob, { id });
          view = new PipelineRunView(runId, settings, openJob, api);
          runs.set(runId, view);
          app.shell.add(view, 'main');
        }
        app.shell.activateById(view.id);
        return view;
      }
    });

    const host: IPipelineEditorHost = {
      api,
      settings,
      config: () =>
        (configPromise ??= api.config().catch(error => {
          configPromise = null;
          throw error;
        })),
      openRun: runId => void app.commands.execute(OPEN_PIPELINE_RUN_COMMAND, { runId }),
      openNotebook: path => void docManager.openOrReveal(path)
    };

    app.docRegistry.addFileType({
      name: PIPELINE_FILE_TYPE,
      displayName: 'trainhub pipeline',
      extensions: ['.pipeline.yaml'],
      mimeTypes: ['text/x-yaml'],
      fileFormat: 'text',
      contentType: 'file',
      icon: trainhubIcon
    });
    app.docRegistry.addWidgetFactory(
      new PipelineEditorFactory(
        {
          name: PIPELINE_FACTORY,
          label: 'Pipeline Editor',
          fileTypes: [PIPELINE_FILE_TYPE],
          defaultFor: [PIPELINE_FILE_TYPE]
        },
        host
      )
    );
  }
};
