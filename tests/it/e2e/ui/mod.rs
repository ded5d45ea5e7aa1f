//! The browser live view (`relay ui`): its sign-in and the guard's rules
//! for a browser over raw HTTP (`sign_in`), and the page itself in a real
//! browser, headless Chromium over WebDriver (`page`, `safety`).

mod page;
mod safety;
mod sign_in;
