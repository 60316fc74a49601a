/**
 * The Schedules side panel: the user's schedules (what each runs, when, whether paused, how
 * its last run went), their actions, and a schedule's history of runs when expanded. It asks
 * the server again every few seconds while shown, and at once after an action.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { Signal } from '@lumino/signaling';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { ISchedule } from '../schedules';
import { IScheduleActions, ScheduleRow } from './schedulerow';

const POLL_MS = 5000;

function SchedulesList(props: {
  api: TrainHubAPI;
  actions: IScheduleActions;
  refresh: Signal<unknown, void>;
  isVisible: () => boolean;
}): JSX.Element {
  const { api, actions, refresh, isVisible } = props;
  const [schedules, setSchedules] = React.useState<ISchedule[] | null>(null);
  const [error, setError] = React.useState('');
  const [expanded, setExpanded] = React.useState<string | null>(null);
  const [detail, setDetail] = React.useState<ISchedule | null>(null);
  const expandedRef = React.useRef(expanded);
  expandedRef.current = expanded;

  const load = React.useCallback(async () => {
    try {
      const listed = await api.listSchedules();
      setSchedules(listed.schedules);
      setError('');
      const open = expandedRef.current;
      if (open && listed.schedules.some(s => s.id === open)) {
        const d = await api.describeSchedule(open);
        if (expandedRef.current === open) {
          setDetail(d);
        }
      }
    } catch (e) {
      setError((e as Error).message);
    }
  }, [api]);

  React.useEffect(() => {
    void load();
    const onRefresh = () => void load();
    refresh.connect(onRefresh);
    const timer = setInterval(() => isVisible() && void load(), POLL_MS);
    return () => {
      refresh.disconnect(onRefresh);
      clearInterval(timer);
    };
  }, [load, refresh, isVisible]);

  const toggle = (id: string) => {
    const next = expanded === id ? null : id;
    setExpanded(next);
    setDetail(null);
    expandedRef.current = next;
    if (next) {
      void load();
    }
  };

  return (
    <div className="jp-trainhub-schedules">
      <div className="jp-trainhub-jobs-header">
        <h2>Schedules</h2>
        <button
          className="jp-mod-styled jp-trainhub-link"
          title="Schedule the open notebook"
          aria-label="New schedule"
          onClick={actions.create}
        >
          +
        </button>
        <button
          className="jp-mod-styled jp-trainhub-link"
          title="Reload"
          aria-label="Reload"
          onClick={() => void load()}
        >
          ⟳
        </button>
      </div>
      {error ? <div className="jp-trainhub-banner">{error}</div> : null}
      <div className="jp-trainhub-schedule-list" role="list" aria-label="Schedules">
        {schedules === null ? (
          <div className="jp-trainhub-empty">Loading…</div>
        ) : schedules.length ? (
          schedules.map(s => (
            <ScheduleRow
              key={s.id}
              schedule={s}
              detail={expanded === s.id ? detail : null}
              expanded={expanded === s.id}
              onToggle={toggle}
              actions={actions}
            />
          ))
        ) : (
          <div className="jp-trainhub-empty">
            No schedules yet. Open a notebook and press “Schedule notebook…”.
          </div>
        )}
      </div>
    </div>
  );
}

export class SchedulesPanel extends ReactWidget {
  /** Emitted to make the panel ask the server again (after an action, a new schedule). */
  readonly refresh = new Signal<unknown, void>(this);
  private readonly visible = (): boolean => this.isVisible;

  constructor(
    private readonly api: TrainHubAPI,
    private readonly actions: IScheduleActions
  ) {
    super();
    this.id = 'trainhub-schedules';
    this.addClass('jp-trainhub-schedules-panel');
    this.title.caption = 'Training schedules';
  }

  render(): JSX.Element {
    return (
      <SchedulesList
        api={this.api}
        actions={this.actions}
        refresh={this.refresh}
        isVisible={this.visible}
      />
    );
  }
}
