//! A real browser for the live view's tests: headless Chromium, from the
//! distribution's packages, driven over WebDriver by its chromedriver
//! (`fantoccini`). One chromedriver serves the whole test binary (started
//! on first use, on a thread that lives as long as the process, so it dies
//! with it); each test gets its own browser session, with a fresh profile,
//! closed when the test's [`Browser`] is dropped.
//!
//! Waiting is done by asking the page (the DOM, polled with a deadline),
//! never by sleeping a fixed time.
//!
//! Without chromedriver the tests fail, saying how to install it:
//! `apt-get install chromium chromium-driver` (what `.ci/run` does), or
//! `RELAY_CHROMEDRIVER` and `RELAY_CHROMIUM` naming the two binaries.

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Relay;

/// How long a page may take to show what a test waits for: generous, for a
/// busy 2-core machine; a page that works shows it in well under a second.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The chromedriver of this test binary: its address, or why there is none.
fn driver() -> &'static str {
    static DRIVER: OnceLock<Result<String, String>> = OnceLock::new();
    match DRIVER.get_or_init(start_driver) {
        Ok(url) => url,
        Err(why) => panic!("{why}"),
    }
}

fn binary(variable: &str, names: &[&str]) -> Option<String> {
    if let Some(path) = std::env::var_os(variable) {
        return Some(path.to_string_lossy().into_owned());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    names.iter().find_map(|name| {
        std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file()).map(|p| p.display().to_string())
    })
}

fn chromium() -> String {
    binary("RELAY_CHROMIUM", &["chromium", "chromium-browser", "google-chrome"]).unwrap_or_else(|| {
        panic!("{}", missing("Chromium"));
    })
}

fn missing(what: &str) -> String {
    format!(
        "{what} is not installed: the live view's browser tests need headless Chromium and its WebDriver. \
         Install them with `apt-get install chromium chromium-driver` (Debian; .ci/run does this), or name them \
         with RELAY_CHROMIUM and RELAY_CHROMEDRIVER"
    )
}

/// Starts chromedriver on a free port, on a thread that never ends: the
/// driver is told to die with that thread (`PR_SET_PDEATHSIG`), so with
/// the test binary, and leaves nothing behind.
fn start_driver() -> Result<String, String> {
    let path = binary("RELAY_CHROMEDRIVER", &["chromedriver"]).ok_or_else(|| missing("chromedriver"))?;
    let port = super::free_port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(&path);
        command.arg(format!("--port={port}")).arg("--log-level=OFF").stdout(Stdio::null()).stderr(Stdio::null());
        // The browser's own zone: the page shows times in it and in the contact's.
        command.env("TZ", "Europe/Madrid");
        // SAFETY: prctl is async-signal-safe; it only sets this child's parent-death signal.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let started = command.spawn().map_err(|e| format!("cannot start {path}: {e}"));
        let _child = match started {
            Ok(child) => {
                let _ = tx.send(Ok(()));
                child
            }
            Err(why) => {
                let _ = tx.send(Err(why));
                return;
            }
        };
        loop {
            std::thread::park();
        }
    });
    rx.recv().map_err(|e| e.to_string())??;
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if started.elapsed() > DEADLINE {
            return Err(format!("chromedriver did not listen on port {port} within {DEADLINE:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(url)
}

/// One browser (a WebDriver session: its own Chromium, a fresh profile).
pub struct Browser {
    runtime: tokio::runtime::Runtime,
    client: Option<fantoccini::Client>,
}

impl Browser {
    pub fn new() -> Browser {
        let url = driver();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium(),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,1000", "--lang=en-US", "--no-first-run", "--disable-extensions",
                         "--disable-background-networking", "--hide-scrollbars", "--force-device-scale-factor=1"],
            },
        });
        let Value::Object(capabilities) = capabilities else { unreachable!() };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = runtime
            .block_on(fantoccini::ClientBuilder::new(connector).capabilities(capabilities).connect(url))
            .unwrap_or_else(|e| panic!("no browser session from chromedriver at {url}: {e}"));
        Browser { runtime, client: Some(client) }
    }

    fn client(&self) -> &fantoccini::Client {
        self.client.as_ref().expect("open")
    }

    pub fn goto(&self, url: &str) {
        self.runtime.block_on(self.client().goto(url)).unwrap_or_else(|e| panic!("cannot open {url}: {e}"));
    }

    pub fn url(&self) -> String {
        self.runtime.block_on(self.client().current_url()).unwrap().to_string()
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub fn eval(&self, script: &str, args: Vec<Value>) -> Value {
        self.runtime.block_on(self.client().execute(script, args)).unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// Runs `script`, which calls its last argument with its result, and
    /// returns that result.
    pub fn eval_async(&self, script: &str, args: Vec<Value>) -> Value {
        self.runtime.block_on(self.client().execute_async(script, args)).unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// Runs `script` until it returns something other than null, false or
    /// an empty string, and returns that; panics after [`DEADLINE`] with
    /// what it is about and the page's text.
    pub fn until(&self, what: &str, script: &str, args: Vec<Value>) -> Value {
        let started = Instant::now();
        loop {
            let value = self.eval(script, args.clone());
            if !(value.is_null() || value == false || value == "") {
                return value;
            }
            if started.elapsed() > DEADLINE {
                let text = self.eval("return document.body.innerText", vec![]);
                panic!("the page never showed {what} within {DEADLINE:?}; it shows:\n{}", text.as_str().unwrap_or(""));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The text of the first element `selector` finds, once there is one.
    pub fn text(&self, selector: &str) -> String {
        let script = "const e = document.querySelector(arguments[0]); return e ? [e.textContent] : null";
        let found = self.until(&format!("an element {selector}"), script, vec![json!(selector)]);
        found[0].as_str().unwrap().to_string()
    }

    /// Clicks the element `selector` finds (waiting until there is one).
    pub fn click(&self, selector: &str) {
        self.on_element(selector, "click", |element| Box::pin(async move { element.click().await.map(|_| ()) }));
    }

    /// Types `text` into the element `selector` finds (a file input takes
    /// a path), in place of what it held: typed again whole if the page,
    /// updating live, replaced the element meanwhile.
    pub fn type_into(&self, selector: &str, text: &str) {
        let text = text.to_string();
        self.on_element(selector, "type into", move |element| {
            let text = text.clone();
            Box::pin(async move {
                element.clear().await?;
                element.send_keys(&text).await
            })
        });
    }

    /// Finds `selector` and does `act` on it; again if the page, updating
    /// live, replaced the element in between.
    fn on_element(
        &self,
        selector: &str,
        what: &str,
        act: impl Fn(
            fantoccini::elements::Element,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), fantoccini::error::CmdError>>>>,
    ) {
        let started = Instant::now();
        loop {
            self.text(selector);
            let done = self.runtime.block_on(async {
                let element = self.client().find(fantoccini::Locator::Css(selector)).await?;
                act(element).await
            });
            match done {
                Ok(()) => return,
                Err(e) if started.elapsed() < DEADLINE && e.to_string().contains("stale") => continue,
                Err(e) => panic!("cannot {what} {selector}: {e}"),
            }
        }
    }

    /// The text of an alert, if the page opened one.
    pub fn alert(&self) -> Option<String> {
        self.runtime.block_on(self.client().get_alert_text()).ok()
    }

    /// The window as a PNG.
    pub fn screenshot(&self) -> Vec<u8> {
        self.runtime.block_on(self.client().screenshot()).unwrap()
    }

    /// Signs in at the address `relay ui [id]` prints, and waits for the
    /// page it opens on.
    pub fn signed_in(relay: &Relay, id: Option<&str>) -> Browser {
        let browser = Browser::new();
        browser.sign_in(relay, id);
        browser
    }

    /// Signs this browser in, as [`Browser::signed_in`].
    pub fn sign_in(&self, relay: &Relay, id: Option<&str>) {
        let browser = self;
        let mut args = vec!["ui"];
        args.extend(id);
        let url = relay.json(&args)["url"].as_str().unwrap().to_string();
        browser.goto(&url);
        let shown = if id.is_some() { ".chat-page" } else { "#conversations, #empty" };
        browser.until("the page, signed in", "return !!document.querySelector(arguments[0])", vec![json!(shown)]);
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.runtime.block_on(client.close());
        }
    }
}

/// Writes `png` to docs/ui/`name` when `RELAY_REFRESH_DOCS` is set (the
/// switch docs/cli.md is refreshed with).
pub fn refresh_screenshot(name: &str, png: &[u8]) {
    if std::env::var_os("RELAY_REFRESH_DOCS").is_none() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ui");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), png).unwrap();
}
