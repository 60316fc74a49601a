/**
 * Schedules in Lab: the Schedules panel in the left sidebar, the Schedule notebook… command
 * (notebook toolbar, cell context menu, palette, the panel's "+"), and the panel's actions.
 */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';

import { TrainHubAPI } from './api';
import { placeNotebookCommands } from './notebookbutton';
import { CommandIDs, scheduleIcon } from './commandids';
import { confirmJobAction } from './confirmjobaction';
import { IConfig } from './models';
import { ISchedule } from './schedules';
import { notebookForm } from './notebookform';
import { showScheduleDialog } from './widgets/scheduledialog';
import { IScheduleActions } from './widgets/schedulerow';
import { SchedulesPanel } from './widgets/schedulespanel';

export interface IScheduleContext {
  api: TrainHubAPI;
  notebooks: INotebookTracker;
  palette: ICommandPalette | null;
  restorer: ILayoutRestorer | null;
  config: () => Promise<IConfig>;
  reportError: (title: string, error: unknown) => void;
}

export function registerSchedules(app: JupyterFrontEnd, ctx: IScheduleContext): SchedulesPanel {
  const { api, notebooks, palette, config, reportError } = ctx;
  const attempt = (what: string, f: (s: ISchedule) => Promise<unknown>) => async (s: ISchedule) => {
    try {
      await f(s);
    } catch (error) {
      reportError(`Could not ${what} ${s.name}`, error);
    }
    panel.refresh.emit();
  };
  const actions: IScheduleActions = {
    pause: attempt('pause', s => api.scheduleAction(s.id, 'pause')),
    resume: attempt('resume', s => api.scheduleAction(s.id, 'resume')),
    runNow: attempt('run', s => api.scheduleAction(s.id, 'run-now')),
    remove: attempt('delete', async s => {
      const question =
        `Delete the schedule ${s.name}? Nothing more runs on it and its frozen copy of the ` +
        'workspace is removed; the jobs it ran stay.';
      if (await confirmJobAction('Delete schedule', question, 'Keep it')) {
        await api.deleteSchedule(s.id);
      }
    }),
    openJob: id => void app.commands.execute(CommandIDs.openJob, { id }),
    openPipelineRun: runId => void app.commands.execute(CommandIDs.openPipelineRun, { runId }),
    create: () => void app.commands.execute(CommandIDs.scheduleNotebook)
  };
  const panel = new SchedulesPanel(api, actions);
  panel.title.icon = scheduleIcon;
  app.shell.add(panel, 'left', { rank: 651 });
  ctx.restorer?.add(panel, 'trainhub-schedules');

  const schedule = async () => {
    const current = notebooks.currentWidget;
    if (!current) {
      reportError('No notebook open', new Error('Open the notebook to schedule first.'));
      return;
    }
    const opened = await notebookForm(current, config, reportError);
    const created = opened ? await showScheduleDialog({ api, ...opened }) : null;
    if (created) {
      panel.refresh.emit();
      app.shell.activateById(panel.id);
      Notification.info(`Scheduled ${created.name}: ${created.cron_text} (${created.timezone}).`, {
        autoClose: 5000
      });
    }
  };

  app.commands.addCommand(CommandIDs.scheduleNotebook, {
    label: 'Schedule notebook…',
    caption: 'Run this notebook as a training job on a schedule',
    icon: scheduleIcon,
    isEnabled: () => notebooks.currentWidget !== null,
    execute: schedule
  });
  app.commands.addCommand(CommandIDs.openSchedules, {
    label: 'Open training schedules panel',
    execute: () => app.shell.activateById(panel.id)
  });
  placeNotebookCommands(app, palette, {
    palette: [CommandIDs.scheduleNotebook, CommandIDs.openSchedules],
    cellMenu: { command: CommandIDs.scheduleNotebook, rank: 101 },
    button: {
      name: 'trainhubSchedule',
      rank: 11,
      command: CommandIDs.scheduleNotebook,
      className: 'jp-trainhub-schedule-button',
      label: 'Schedule…'
    }
  });
  return panel;
}
