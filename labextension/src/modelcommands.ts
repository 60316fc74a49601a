/**
 * The model registry in Lab: the Models panel in the left sidebar, its actions (move an alias,
 * archive, open the job, compare two versions' jobs, copy a load snippet), and Register as
 * model (the job view's Checkpoints and Outputs tabs), which ends in a notification whose
 * button opens the panel at the new version.
 */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { Clipboard, ICommandPalette, Notification } from '@jupyterlab/apputils';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { TrainHubAPI } from './api';
import { CommandIDs, modelsIcon, PALETTE_CATEGORY } from './commandids';
import { compareJobs, registeredText, registerRequest, RegisterWhat } from './registry';
import { askArchive, askMoveAlias, askRegister } from './widgets/modeldialogs';
import { IModelActions } from './widgets/modeldetail';
import { ModelsPanel } from './widgets/modelspanel';

export interface IModelsContext {
  api: TrainHubAPI;
  palette: ICommandPalette | null;
  restorer: ILayoutRestorer | null;
  reportError: (title: string, error: unknown) => void;
}

/** What the Register command was asked to register, from its args. */
function registerWhat(args: ReadonlyPartialJSONObject): RegisterWhat | null {
  if (typeof args.step === 'number') {
    return { step: args.step };
  }
  return typeof args.path === 'string' && args.path ? { path: args.path } : null;
}

export function registerModels(app: JupyterFrontEnd, ctx: IModelsContext): ModelsPanel {
  const { api, reportError } = ctx;
  const changed = () => panel.refresh.emit();
  const actions: IModelActions = {
    openJob: id => void app.commands.execute(CommandIDs.openJob, { id }),
    compare: (a, b) => {
      const pair = compareJobs(a, b);
      if ('error' in pair) {
        reportError('Nothing to compare', new Error(pair.error));
      } else {
        void app.commands.execute(CommandIDs.compare, { ids: pair.ids });
      }
    },
    copy: snippet => {
      Clipboard.copyToSystem(snippet);
      Notification.info(`Copied ${snippet}`, { autoClose: 3000 });
    },
    moveAlias: async (view, v) => {
      const asked = await askMoveAlias(view.name, v.version, Object.keys(view.aliases));
      if (!asked) {
        return;
      }
      try {
        await api.moveAlias(view.name, asked.alias, v.version, asked.reason);
      } catch (error) {
        // a protected alias: the server's sentence names the role that moves it
        reportError(`Could not move @${asked.alias} of ${view.name}`, error);
      }
      changed();
    },
    archive: async (view, v) => {
      const asked = await askArchive(view.name, v.version, !v.archived);
      if (!asked) {
        return;
      }
      try {
        await api.archiveVersion(view.name, v.version, !v.archived, asked.reason);
      } catch (error) {
        reportError(`Could not change ${view.name} version ${v.version}`, error);
      }
      changed();
    }
  };
  const panel = new ModelsPanel(api, actions);
  panel.title.icon = modelsIcon;
  app.shell.add(panel, 'left', { rank: 652 });
  ctx.restorer?.add(panel, 'trainhub-models');

  app.commands.addCommand(CommandIDs.openModels, {
    label: 'Open models panel',
    caption: 'The models of your team: versions, aliases, lineage, audit log',
    execute: args => {
      if (typeof args.name === 'string') {
        panel.openModel(args.name, typeof args.version === 'number' ? args.version : null);
      }
      app.shell.activateById(panel.id);
    }
  });

  app.commands.addCommand(CommandIDs.registerModel, {
    label: 'Register as model…',
    caption: 'Register this checkpoint or output as the next version of a model',
    execute: async args => {
      const jobId = typeof args.jobId === 'string' ? args.jobId : '';
      const what = registerWhat(args);
      if (!jobId || !what) {
        return;
      }
      // the names offered: a failure to list them still lets one type a name
      const names = await api.listModels().then(
        r => r.models.map(m => m.name),
        () => []
      );
      const label = 'step' in what ? `the checkpoint of step ${what.step}` : `output ${what.path}`;
      const asked = await askRegister(label, names);
      if (!asked) {
        return;
      }
      try {
        const made = await api.registerModel(
          registerRequest(jobId, what, asked.name, asked.description)
        );
        changed();
        Notification.success(registeredText(made), {
          autoClose: 10000,
          actions: [
            {
              label: 'Show in Models',
              callback: () =>
                void app.commands.execute(CommandIDs.openModels, {
                  name: made.model,
                  version: made.version
                })
            }
          ]
        });
      } catch (error) {
        reportError(`Could not register ${label} as ${asked.name}`, error);
      }
    }
  });
  ctx.palette?.addItem({ command: CommandIDs.openModels, category: PALETTE_CATEGORY });
  return panel;
}
