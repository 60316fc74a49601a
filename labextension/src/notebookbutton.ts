/**
 * A button in every notebook's toolbar that runs one of trainhub's commands on that notebook
 * ("Submit as job", "Schedule…"), and the other places such a command shows.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, ToolbarButton } from '@jupyterlab/apputils';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { PALETTE_CATEGORY } from './commandids';

export interface ICommandButton {
  /** The toolbar item's name, and where it goes among the toolbar's items. */
  name: string;
  rank: number;
  command: string;
  className: string;
  label: string;
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
    const { name, rank, command, className, label } = this.button;
    const button = new ToolbarButton({
      className,
      label,
      // the command's icon and caption, as the palette and menus show them
      icon: this.app.commands.icon(command),
      tooltip: this.app.commands.caption(command),
      onClick: () => {
        this.app.shell.activateById(panel.id);
        void this.app.commands.execute(command);
      }
    });
    panel.toolbar.insertItem(rank, name, button);
    return new DisposableDelegate(() => button.dispose());
  }
}

/**
 * Shows a notebook's commands: `palette` in the command palette, `cellMenu` in a cell's context
 * menu (at its rank), and `button` in every notebook's toolbar.
 */
export function placeNotebookCommands(
  app: JupyterFrontEnd,
  palette: ICommandPalette | null,
  where: { palette: string[]; cellMenu: { command: string; rank: number }; button: ICommandButton }
): void {
  for (const command of where.palette) {
    palette?.addItem({ command, category: PALETTE_CATEGORY });
  }
  app.contextMenu.addItem({ ...where.cellMenu, selector: '.jp-Notebook .jp-Cell' });
  app.docRegistry.addWidgetExtension('Notebook', new CommandButtonExtension(app, where.button));
}
