//! [`Decoded`]: a typed view that keeps the message it borrows from.

use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use yoke::{Yoke, Yokeable};

use crate::peer::Incoming;

mod by_member;

/// What a [`Decoded`] borrows from: a message (its result or its params), or JSON text.
pub(crate) enum Cart {
    /// A response; the view is of its `result`.
    Result(Incoming),
    /// A request; the view is of its `params` (`{}` when it has none).
    Params(Incoming),
    /// JSON text of its own.
    Text(Box<str>),
}

impl Cart {
    /// The top-level members of the message's `result` (or `params`), when it has them (read
    /// from what the parse recorded, when it did); `None` for text of its own, which no parse
    /// checked.
    fn members(&self) -> Option<crate::message::members::Members<'_>> {
        match self {
            Self::Result(m) => m.message().result_members(),
            Self::Params(m) => m.message().param_members(),
            Self::Text(_) => None,
        }
    }

    fn json(&self) -> &str {
        match self {
            Self::Result(m) => m.result().map_or("null", |r| r.get()),
            Self::Params(m) => m.params().map_or("{}", |p| p.get()),
            Self::Text(t) => t,
        }
    }
}

/// A typed, borrowed view of one message's result (or params), together with the message: the
/// strings of `T` point into the message's bytes, so decoding copies nothing that was written
/// without escapes, and the value can still be returned, stored and sent to another task.
///
/// `T` is named at `'static` (`Decoded<CallToolResult<'static>>`); [`get`](Decoded::get) lends
/// it at the lifetime of the borrow.
///
/// ```
/// use mcpwire::client::Decoded;
/// use mcpwire::mcp::types::CallToolResult;
///
/// let r: Decoded<CallToolResult<'static>> =
///     Decoded::from_json(r#"{"content":[{"type":"text","text":"hi"}]}"#.into()).unwrap();
/// assert_eq!(r.get().content[0].as_text(), Some("hi"));
/// ```
pub struct Decoded<T: for<'a> Yokeable<'a>>(Yoke<T, Arc<Cart>>);

impl<T> Decoded<T>
where
    T: for<'a> Yokeable<'a>,
    for<'a> <T as Yokeable<'a>>::Output: Deserialize<'a>,
{
    pub(crate) fn decode(cart: Cart) -> Result<Self, serde_json::Error> {
        Self::decode_with(cart, |_| {})
    }

    /// Decodes, then lets `fix` adjust the view before it is sealed.
    pub(crate) fn decode_with(
        cart: Cart,
        fix: impl for<'a> FnOnce(&mut <T as Yokeable<'a>>::Output),
    ) -> Result<Self, serde_json::Error> {
        Yoke::try_attach_to_cart(Arc::new(cart), |c: &Cart| {
            // Member by member in a parsed message: the members `T` does not have are then
            // skipped without being read.
            let mut v = match c.members() {
                Some(m) => Deserialize::deserialize(by_member::ByMember::new(m))?,
                None => serde_json::from_str(c.json())?,
            };
            fix(&mut v);
            Ok(v)
        })
        .map(Self)
    }

    /// Decodes JSON text it then keeps.
    ///
    /// # Errors
    ///
    /// When the text is not JSON of `T`'s shape; serde's reason names the field.
    pub fn from_json(json: String) -> Result<Self, serde_json::Error> {
        Self::decode(Cart::Text(json.into_boxed_str()))
    }
}

impl<T: for<'a> Yokeable<'a>> Decoded<T> {
    /// The value.
    #[must_use]
    pub fn get(&self) -> &<T as Yokeable<'_>>::Output {
        self.0.get()
    }

    /// The JSON text the value was decoded from, exactly as it came.
    #[must_use]
    pub fn json(&self) -> &str {
        self.0.backing_cart().json()
    }

    /// A part of the value, as a view of its own that shares the same message.
    #[must_use]
    pub fn project<P: for<'a> Yokeable<'a>>(
        &self,
        f: impl for<'a> FnOnce(
            &<T as Yokeable<'a>>::Output,
            std::marker::PhantomData<&'a ()>,
        ) -> <P as Yokeable<'a>>::Output,
    ) -> Decoded<P> {
        Decoded(self.0.map_project_cloned(f))
    }
}

impl<T> fmt::Debug for Decoded<T>
where
    T: for<'a> Yokeable<'a>,
    for<'a> <T as Yokeable<'a>>::Output: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

impl<T: for<'a> Yokeable<'a>> Clone for Decoded<T>
where
    for<'a> <T as Yokeable<'a>>::Output: Clone,
{
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}
