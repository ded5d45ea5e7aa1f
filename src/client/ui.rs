//! The live view's sign-in, as `relay ui` asks for it.

use reqwest::Method;

use super::{Client, Error};
use crate::api::{LoginCode, LoginCodeRequest};

impl Client {
    /// `POST /login-codes`: a one-time sign-in address for the live view.
    pub async fn login_code(&self, request: &LoginCodeRequest) -> Result<LoginCode, Error> {
        self.request(Method::POST, "/login-codes", Some(request)).await
    }
}
