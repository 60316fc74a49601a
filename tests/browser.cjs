// Debian's Chromium through playwright, as the browser checks under tests/ drive it.

// A fresh browser: /usr/bin/chromium unless CHROMIUM names another.
function launch(chromium) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking']
  });
}

// Runs `visit(page, result)` on a page of `viewport` in a fresh browser, then prints `result`
// as one JSON line: what the visit saw, and `error` where it stopped.
async function reportVisit(chromium, viewport, visit) {
  const browser = await launch(chromium);
  const result = {};
  try {
    const page = await browser.newPage({ viewport });
    await visit(page, result);
  } catch (e) {
    result.error = String(e);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + '\n');
}

module.exports = { launch, reportVisit };
