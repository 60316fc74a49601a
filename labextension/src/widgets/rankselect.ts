/**
 * The rank picker of a job view's tab (Logs, Metrics, Notebook): a select of the job's ranks.
 * Each tab writes its options again only when its ranks change, so that a list the person has
 * open is left as it is.
 */

/** The tab's rank select, named `ariaLabel`; `onChange` gets the chosen option's value. */
export function rankSelect(
  ariaLabel: string,
  onChange: (value: string) => void
): HTMLSelectElement {
  const select = document.createElement('select');
  select.className = 'jp-mod-styled';
  select.setAttribute('aria-label', ariaLabel);
  select.addEventListener('change', () => onChange(select.value));
  return select;
}

/** Put `options` ([value, text] each) in place of the select's options. */
export function setOptions(select: HTMLSelectElement, options: [string, string][]): void {
  select.textContent = '';
  for (const [value, text] of options) {
    const o = document.createElement('option');
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }
}
