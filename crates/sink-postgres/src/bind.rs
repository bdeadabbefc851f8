//! sqlx bind parameters backed by this crate's own binary encoders: one converted value
//! (multi-row INSERT) or a whole pre-encoded array (UNNEST), each declaring its type OID
//! at run time, so no value is copied into an owned Rust type first.

use sqlx::encode::{Encode, IsNull};
use sqlx::error::BoxDynError;
use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo};
use sqlx::{Postgres, Type};

use crate::encode::{PgType, Value, write_binary};

/// One value of an INSERT, already converted to its column's wire type.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param<'a> {
    pub(crate) value: Value<'a>,
    pub(crate) ty: PgType,
}

impl Type<Postgres> for Param<'_> {
    fn type_info() -> PgTypeInfo {
        // Only a fallback: `produces` names each value's own type.
        PgTypeInfo::with_oid(Oid(PgType::Text.oid()))
    }
}

impl Encode<'_, Postgres> for Param<'_> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        Ok(if write_binary(buf, &self.value) {
            IsNull::No
        } else {
            IsNull::Yes
        })
    }

    fn produces(&self) -> Option<PgTypeInfo> {
        Some(PgTypeInfo::with_oid(Oid(self.ty.oid())))
    }

    fn size_hint(&self) -> usize {
        match self.value {
            Value::Str(s) => s.len(),
            _ => 8,
        }
    }
}

/// An array parameter whose binary form was built by [`crate::encode::ArrayWriter`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawArray<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) elem: PgType,
}

impl Type<Postgres> for RawArray<'_> {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(Oid(PgType::Text.array_oid()))
    }
}

impl Encode<'_, Postgres> for RawArray<'_> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.extend_from_slice(self.bytes);
        Ok(IsNull::No)
    }

    fn produces(&self) -> Option<PgTypeInfo> {
        Some(PgTypeInfo::with_oid(Oid(self.elem.array_oid())))
    }

    fn size_hint(&self) -> usize {
        self.bytes.len()
    }
}
