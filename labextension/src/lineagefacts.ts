/** What a job's lineage records, as the key/value rows of the Overview's Lineage section. */

/** What the job really ran in: the pods' image digest, or the local environment. */
function ranImageText(ran: unknown): string | undefined {
  const r = ran as Record<string, unknown> | null | undefined;
  if (!r) {
    return undefined;
  }
  if (r.backend === 'local') {
    return `local environment ${String(r.environment)} (no container image)`;
  }
  return r.image_id ? String(r.image_id) : undefined;
}

/** One row per dataset: its name, and its fingerprint as lineage recorded it. */
function datasetFacts(datasets: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of Array.isArray(datasets) ? datasets : []) {
    const fp = d?.fingerprint as Record<string, unknown> | undefined;
    const parts = fp
      ? [
          `${String(fp.files)} files, ${String(fp.bytes)} bytes`,
          fp.newest_mtime ? `newest ${String(fp.newest_mtime)}` : '',
          fp.content_hash ? String(fp.content_hash) : ''
        ]
      : [String(d?.error ?? 'no fingerprint')];
    out[`dataset ${String(d?.name)}`] = parts.filter(Boolean).join(' · ');
  }
  return out;
}

export function lineageFacts(lineage: Record<string, unknown>): Record<string, unknown> {
  const git = lineage.git as Record<string, unknown> | null | undefined;
  const python = lineage.python as Record<string, unknown> | undefined;
  const torch = lineage.torch as Record<string, unknown> | null | undefined;
  const facts: Record<string, unknown> = {
    created: lineage.created,
    host: lineage.host,
    'content hash': lineage.content_hash,
    git: git?.commit
      ? `${String(git.commit).slice(0, 12)}${git.branch ? ` on ${String(git.branch)}` : ''}${git.dirty ? ' (uncommitted changes)' : ''}`
      : 'not a git checkout',
    python: python?.version,
    torch: torch?.version ?? torch?.torch,
    'image ran': ranImageText(lineage.ran_image),
    ...datasetFacts(lineage.datasets)
  };
  return Object.fromEntries(Object.entries(facts).filter(([, v]) => v !== undefined && v !== null));
}
