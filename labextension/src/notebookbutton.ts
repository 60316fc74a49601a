/**
 * A button in every notebook's toolbar that runs one of trainhub's commands on that notebook
 * ("Submit as job", "Schedule…").
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ToolbarButton } from '@jupyterlab/apputils';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

export interface ICommandButton {
  /** The toolbar item's name, and where it goes among the toolbar's items. */
  name: string;
  rank: number;
  command: string;
  className: string;
  icon: LabIcon;
  label: string;
  tooltip: string;
}

export class CommandButtonExtension implements DocumentRegistry.IWidgetExtension<
  NotebookPanel,
  INotebookModel
> {
  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly button: ICommandButton
  ) {}

  createNew(panel: NotebookPanel): IDisposable {
    const { name, rank, command, className, icon, label, tooltip } = this.button;
    const button = new ToolbarButton({
      className,
      icon,
      label,
      tooltip,
      onClick: () => {
        this.app.shell.activateById(panel.id);
        void this.app.commands.execute(command);
      }
    });
    panel.toolbar.insertItem(rank, name, button);
    return new DisposableDelegate(() => button.dispose());
  }
}
