// Drives the hub's spawn form in Debian's Chromium with playwright (from the repo's
// node_modules): log in, read the offered profiles, choose one, spawn, land on the server.
// argv: <playwright module dir> <hub url> <user> <password> <server name> <profile> <gpus> <screenshot dir>
const [pwDir, hubUrl, user, password, server, profile, gpus, shots] = process.argv.slice(2);
const { chromium } = require(pwDir);
const { reportVisit } = require('../browser.cjs');

reportVisit(chromium, { width: 1200, height: 900 }, async (page, result) => {
  await page.goto(`${hubUrl}/hub/login`);
  await page.fill('input[name=username]', user);
  await page.fill('input[name=password]', password);
  await Promise.all([page.waitForNavigation(), page.click('input[type=submit], button[type=submit]')]);
  await page.goto(`${hubUrl}/hub/spawn/${user}/${server}`);
  await page.waitForSelector('input[name=profile]');
  result.profiles = await page.$$eval('input[name=profile]', els => els.map(e => e.value));
  result.titles = await page.$$eval('.js-profile-label h3', els => els.map(e => e.textContent.trim()));
  result.gpuChoices = await page.$$eval(`select[name="profile-option-${profile}--gpus"] option`,
    els => els.map(e => e.value));
  await page.screenshot({ path: `${shots}/spawn-form-${user}.png`, fullPage: true });
  await page.click(`label[for="profile-item-${profile}"] h3`);
  await page.selectOption(`select[name="profile-option-${profile}--gpus"]`, gpus);
  await Promise.all([page.waitForNavigation(), page.click('form input[type=submit], form button[type=submit]')]);
  await page.waitForURL(url => url.pathname.startsWith(`/user/${user}/${server}/`), { timeout: 180000 });
  result.landed = new URL(page.url()).pathname;
  await page.screenshot({ path: `${shots}/spawned-${user}.png` });
});
