/**
 * A pipeline's DAG drawn as boxes (HTML) and bezier edges (SVG), laid out in layers
 * (pipelinelayout.ts). The editor's canvas, where a drag from a step's output port to
 * another step connects them, and the run graph's, where each box shows its step's state.
 * Every value goes in as text (React escapes it), never as HTML.
 */
import * as React from 'react';

import { IEdge } from '../pipelinegraph';
import { layout } from '../pipelinelayout';

const W = 220;
const H = 66;
const GAP_X = 70;
const GAP_Y = 30;
const PAD = 24;

/** What a step's box shows besides its name. */
export interface INodeInfo {
  subtitle: string;
  /** A state badge (jp-trainhub-state-<stateClass>). */
  state?: string;
  stateClass?: string;
  /** A sentence under it: why it waits, how it failed, whose result it reuses. */
  detail?: string;
  errors?: string[];
}

export interface IPipelineCanvasProps {
  names: string[];
  edges: IEdge[];
  info: (name: string) => INodeInfo;
  selected?: string | null;
  onSelect?: (name: string | null) => void;
  /** Editable canvases: a drag from an output port to a step. */
  onConnect?: (from: string, to: string) => void;
  onDisconnect?: (from: string, to: string) => void;
  /** A double click or Enter on a step. */
  onOpen?: (name: string) => void;
  /** Delete or Backspace on a step (the editor). */
  onRemove?: (name: string) => void;
  empty?: React.ReactNode;
}

function position(place: { layer: number; row: number }): { x: number; y: number } {
  return { x: PAD + place.layer * (W + GAP_X), y: PAD + place.row * (H + GAP_Y) };
}

function curve(x1: number, y1: number, x2: number, y2: number): string {
  const dx = Math.max(30, Math.abs(x2 - x1) / 2);
  return `M ${x1} ${y1} C ${x1 + dx} ${y1}, ${x2 - dx} ${y2}, ${x2} ${y2}`;
}

export function PipelineCanvas(props: IPipelineCanvasProps): JSX.Element {
  const { names, edges, info, selected } = props;
  const places = React.useMemo(() => layout(names, edges), [names, edges]);
  const box = React.useRef<HTMLDivElement>(null);
  const [wire, setWire] = React.useState<{ from: string; x: number; y: number } | null>(null);

  // While a wire is drawn, follow the pointer; where it is let go, connect.
  React.useEffect(() => {
    if (!wire) {
      return;
    }
    const at = (e: MouseEvent) => {
      const r = box.current!.getBoundingClientRect();
      return {
        x: e.clientX - r.left + box.current!.scrollLeft,
        y: e.clientY - r.top + box.current!.scrollTop
      };
    };
    const move = (e: MouseEvent) => setWire(w => (w ? { ...w, ...at(e) } : w));
    const up = (e: MouseEvent) => {
      const target = (document.elementFromPoint(e.clientX, e.clientY) as HTMLElement | null)
        ?.closest('[data-step]')
        ?.getAttribute('data-step');
      if (target && target !== wire.from) {
        props.onConnect?.(wire.from, target);
      }
      setWire(null);
    };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
    return () => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
    };
  }, [wire?.from]);

  if (!names.length) {
    return <div className="jp-trainhub-pipeline-canvas jp-mod-empty">{props.empty}</div>;
  }
  let width = 0;
  let height = 0;
  for (const p of Object.values(places)) {
    const { x, y } = position(p);
    width = Math.max(width, x + W + PAD);
    height = Math.max(height, y + H + PAD);
  }
  const start = wire ? position(places[wire.from]) : null;
  return (
    <div
      className="jp-trainhub-pipeline-canvas"
      ref={box}
      onClick={e => {
        if (e.target === e.currentTarget || (e.target as Element).tagName === 'svg') {
          props.onSelect?.(null);
        }
      }}
    >
      <svg className="jp-trainhub-pipeline-edges" width={width} height={height}>
        {edges
          .filter(e => places[e.from] && places[e.to])
          .map(e => {
            const a = position(places[e.from]);
            const b = position(places[e.to]);
            return (
              <path
                key={`${e.from}->${e.to}`}
                className={`jp-trainhub-pipeline-edge${e.explicit ? '' : ' jp-mod-implied'}`}
                data-from={e.from}
                data-to={e.to}
                d={curve(a.x + W, a.y + H / 2, b.x, b.y + H / 2)}
                onDoubleClick={() => props.onDisconnect?.(e.from, e.to)}
              >
                <title>
                  {e.from} → {e.to}
                  {e.inputs.length ? ` (inputs: ${e.inputs.join(', ')})` : ''}
                  {props.onDisconnect ? '; double-click to remove' : ''}
                </title>
              </path>
            );
          })}
        {wire && start ? (
          <path
            className="jp-trainhub-pipeline-edge jp-mod-drawing"
            d={curve(start.x + W, start.y + H / 2, wire.x, wire.y)}
          />
        ) : null}
      </svg>
      {names.map(name => {
        const { x, y } = position(places[name]);
        const i = info(name);
        const classes = ['jp-trainhub-pipeline-node'];
        if (name === selected) {
          classes.push('jp-mod-selected');
        }
        if (i.errors?.length) {
          classes.push('jp-mod-error');
        }
        return (
          <div
            key={name}
            className={classes.join(' ')}
            data-step={name}
            data-state={i.stateClass}
            style={{ left: x, top: y, width: W, height: H }}
            tabIndex={0}
            role="button"
            aria-pressed={name === selected}
            title={i.errors?.join('\n') || i.detail || undefined}
            onClick={() => props.onSelect?.(name)}
            onDoubleClick={() => props.onOpen?.(name)}
            onKeyDown={e => {
              if (e.key === 'Enter') {
                props.onOpen?.(name);
              } else if ((e.key === 'Delete' || e.key === 'Backspace') && props.onRemove) {
                e.preventDefault();
                props.onRemove(name);
              }
            }}
          >
            {props.onConnect ? <span className="jp-trainhub-pipeline-port jp-mod-in" /> : null}
            <div className="jp-trainhub-pipeline-node-head">
              <span className="jp-trainhub-pipeline-node-name">{name}</span>
              {i.state ? (
                <span className={`jp-trainhub-state jp-trainhub-state-${i.stateClass ?? i.state}`}>
                  {i.state}
                </span>
              ) : null}
              {i.errors?.length ? (
                <span className="jp-trainhub-pipeline-node-errors">
                  {i.errors.length} {i.errors.length === 1 ? 'mistake' : 'mistakes'}
                </span>
              ) : null}
            </div>
            <div className="jp-trainhub-pipeline-node-sub jp-trainhub-mono">{i.subtitle}</div>
            {i.detail ? <div className="jp-trainhub-pipeline-node-detail">{i.detail}</div> : null}
            {props.onConnect ? (
              <span
                className="jp-trainhub-pipeline-port jp-mod-out"
                title="Drag to the step that runs after this one"
                onMouseDown={e => {
                  e.preventDefault();
                  e.stopPropagation();
                  const r = box.current!.getBoundingClientRect();
                  setWire({
                    from: name,
                    x: e.clientX - r.left + box.current!.scrollLeft,
                    y: e.clientY - r.top + box.current!.scrollTop
                  });
                }}
              />
            ) : null}
          </div>
        );
      })}
    </div>
  );
}
