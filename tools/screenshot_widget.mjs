// Screenshot of a live widget in JupyterLab, in headless Chromium (how docs/widget_sampling.png was made).
//   npm install playwright-core            # drives the system's Chromium (Debian: apt-get install chromium)
//   jupyter lab --no-browser --port 8899 --ServerApp.token=mint --ServerApp.root_dir=DIR &   # DIR holds NOTEBOOK
//   node tools/screenshot_widget.mjs http://localhost:8899/lab/tree/NOTEBOOK?token=mint OUT.png
// The notebook is opened (its stored kernelspec means no "Select Kernel" dialog), Run All is chosen from the Run
// menu, the script waits for the widget's figure, moves the temperature slider's value to 1.3 by typing into
// its readout (the widget redraws from the kernel), and screenshots the widget's output area.
import { chromium } from "playwright-core";
const [url, out] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu",
  "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
const page = await browser.newPage({ viewport: { width: 1300, height: 1100 } });
await page.goto(url);
await page.waitForSelector(".jp-Notebook", { timeout: 120000 });
await page.waitForTimeout(3000);
const no = page.locator(".jp-Notification-Toast button:text-is('No')");   // the "Jupyter news?" toast
if (await no.count()) await no.first().click();
await page.click(".lm-MenuBar-itemLabel:text-is('Run')");
await page.click(".lm-Menu-itemLabel:text-is('Run All Cells')");
const widget = page.locator(".jupyter-widgets.widget-vbox").first();
await widget.waitFor({ timeout: 600000 });
await widget.locator("img").first().waitFor({ timeout: 600000 });
const before = await widget.locator("img").first().getAttribute("src");
const readout = widget.locator(".widget-readout").first();          // the temperature slider's value
await readout.click(); await page.keyboard.press("Control+A"); await page.keyboard.type("1.3"); await page.keyboard.press("Enter");
for (let i = 0; i < 120; i++) {                                      // wait for the kernel to redraw the figure
  const img = widget.locator("img").first();
  if ((await img.count()) && (await img.getAttribute("src")) !== before) break;
  await page.waitForTimeout(1000);
}
await page.waitForTimeout(1500);
await widget.scrollIntoViewIfNeeded();
await widget.screenshot({ path: out });
console.log(`saved ${out}`);
await browser.close();
