/** Which jobs "Open in TensorBoard" opens, and what its tab is called (pure). */

export const TENSORBOARD_MOST = 10;

/** The jobs a command's args name, each once, in order (1 to TENSORBOARD_MOST of them). */
export function tensorBoardIds(args: { ids?: unknown }): string[] {
  const ids = Array.isArray(args.ids) ? args.ids.filter(i => typeof i === 'string' && i) : [];
  const unique = [...new Set(ids as string[])];
  if (unique.length < 1 || unique.length > TENSORBOARD_MOST) {
    throw new Error(`Open 1 to ${TENSORBOARD_MOST} jobs in TensorBoard; got ${unique.length}`);
  }
  return unique;
}

/** The tab's title: the job, or how many. */
export function tensorBoardTitle(ids: string[]): string {
  return ids.length === 1 ? `TensorBoard: ${ids[0]}` : `TensorBoard: ${ids.length} jobs`;
}
