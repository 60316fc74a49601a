/**
 * Pipelines in JupyterLab: the `*.pipeline.yaml` file type, its canvas (the Pipeline Editor,
 * the default way to open one; "Open With > Editor" shows the text of the same document) and
 * the run graph's command.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';

import { TrainHubAPI } from './api';
import { CommandIDs, PALETTE_CATEGORY, trainhubIcon } from './commandids';
import { IConfig } from './models';
import {
  IPipelineEditorHost,
  PIPELINE_FACTORY,
  PIPELINE_FILE_TYPE,
  PipelineEditorFactory
} from './widgets/pipelineeditor';
import { OPEN_PIPELINE_RUN_COMMAND, PipelineRunView } from './widgets/pipelinerunview';
import { PipelineRunCompare } from './widgets/pipelineruncompare';
import { showOnce } from './widgets/followedview';

export const pipelinePlugin: JupyterFrontEndPlugin<void> = {
  id: 'trainhub:pipelines',
  description: 'Draw a pipeline of notebooks, run it, and follow its runs as graphs.',
  autoStart: true,
  requires: [IDocumentManager],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    palette: ICommandPalette | null
  ) => {
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
        const openJob = (id: string) => void app.commands.execute(CommandIDs.openJob, { id });
        const openRun = (id: string) =>
          void app.commands.execute(OPEN_PIPELINE_RUN_COMMAND, { runId: id });
        return showOnce(
          app,
          runs,
          runId,
          () => new PipelineRunView(runId, settings, openJob, api, openRun)
        );
      }
    });

    app.commands.addCommand(CommandIDs.comparePipelineRuns, {
      label: 'Compare two pipeline runs',
      caption: 'Two runs of a pipeline step by step',
      execute: args => {
        const ids = Array.isArray(args.ids) ? args.ids.map(String) : [];
        if (ids.length !== 2) {
          throw new Error(`${CommandIDs.comparePipelineRuns} needs {ids: [a, b]}`);
        }
        const openJob = (id: string) => void app.commands.execute(CommandIDs.openJob, { id });
        const compareJobs = app.commands.hasCommand(CommandIDs.compare)
          ? (jobs: string[]) => void app.commands.execute(CommandIDs.compare, { ids: jobs })
          : null;
        const view = new PipelineRunCompare([ids[0], ids[1]], settings, openJob, compareJobs);
        app.shell.add(view, 'main');
        app.shell.activateById(view.id);
        return view;
      }
    });

    app.commands.addCommand(CommandIDs.newPipeline, {
      label: 'New pipeline',
      caption: 'A new *.pipeline.yaml, opened in the Pipeline Editor',
      icon: trainhubIcon,
      execute: async args => {
        const cwd = typeof args.cwd === 'string' ? args.cwd : '';
        const model = await docManager.newUntitled({
          path: cwd,
          type: 'file',
          ext: '.pipeline.yaml'
        });
        return docManager.openOrReveal(model.path, PIPELINE_FACTORY);
      }
    });
    palette?.addItem({ command: CommandIDs.newPipeline, category: PALETTE_CATEGORY });

    const host: IPipelineEditorHost = {
      api,
      settings,
      config: () =>
        (configPromise ??= api.config().catch(error => {
          configPromise = null;
          throw error;
        })),
      openRun: runId => void app.commands.execute(OPEN_PIPELINE_RUN_COMMAND, { runId }),
      compareRuns: ids => void app.commands.execute(CommandIDs.comparePipelineRuns, { ids }),
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
