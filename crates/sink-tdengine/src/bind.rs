//! The statement-API layout of a batch: rows grouped by child table, and for each group the
//! columns bound in prepared-statement order (timestamp, then the fields in schema order)
//! and the tags (in super-table tag order).

use std::collections::HashMap;

use taos::taos_query::common::Timestamp;
use taos::taos_query::common::views::{
    BigIntView, BoolView, DoubleView, FloatView, IntView, SmallIntView, TinyIntView, UBigIntView,
};
use taos::{ColumnView, Ty, Value};
use tsload_core::{Column, ColumnValues, DataType, TableBatch, TagValue};

use crate::config::Precision;
use crate::layout::{TableLayout, TagFrom};
use crate::sql::{TagLit, coerce_tag};

/// The rows of one table batch grouped by device (child table), groups in order of first
/// appearance, rows in batch order within a group. Buffers are reused between batches.
#[derive(Debug, Default)]
pub(crate) struct ChildGroups {
    /// Group index of each device seen in the current batch.
    index: HashMap<u32, usize>,
    /// `(device, start, end)`: the group's rows are `rows[start..end]`.
    groups: Vec<(u32, usize, usize)>,
    /// Row indices, group after group.
    rows: Vec<u32>,
}

impl ChildGroups {
    /// Groups the rows of a batch whose row `i` belongs to `devices[i]`.
    pub(crate) fn build(&mut self, devices: &[u32]) {
        self.index.clear();
        self.groups.clear();
        // Pass 1: group of each device and group sizes (kept in `end` for now).
        for &d in devices {
            let next = self.groups.len();
            let g = *self.index.entry(d).or_insert(next);
            if g == next {
                self.groups.push((d, 0, 0));
            }
            self.groups[g].2 += 1;
        }
        // Starts from the sizes; `end` becomes the fill cursor.
        let mut at = 0;
        for g in &mut self.groups {
            let size = g.2;
            g.1 = at;
            g.2 = at;
            at += size;
        }
        // Pass 2: place each row.
        self.rows.clear();
        self.rows.resize(devices.len(), 0);
        for (row, d) in devices.iter().enumerate() {
            let g = &mut self.groups[self.index[d]];
            self.rows[g.2] = row as u32;
            g.2 += 1;
        }
    }

    /// `(device, rows)` of each group.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &[u32])> {
        self.groups.iter().map(|&(d, s, e)| (d, &self.rows[s..e]))
    }

    pub(crate) fn len(&self) -> usize {
        self.groups.len()
    }
}

/// The columns bound for the rows `rows` of `tb`: the timestamps in `precision`, then one
/// view per field in schema order. Non-finite floats are bound as NULL (as in SQL mode).
/// Fails, naming the column, when a value does not fit its column type.
pub(crate) fn column_views(
    tb: &TableBatch,
    layout: &TableLayout,
    rows: &[u32],
    precision: Precision,
) -> Result<Vec<ColumnView>, String> {
    let mut views = Vec::with_capacity(1 + layout.fields.len());
    let ts: Vec<i64> = rows
        .iter()
        .map(|&r| precision.units_of_ns(tb.ts[r as usize]))
        .collect();
    views.push(timestamp_view(ts, precision));
    for (col, f) in tb.columns.iter().zip(&layout.fields) {
        views.push(
            field_view(col, f.data_type, rows, precision)
                .map_err(|e| format!("column {:?}: {e}", f.name))?,
        );
    }
    Ok(views)
}

fn timestamp_view(values: Vec<i64>, precision: Precision) -> ColumnView {
    match precision {
        Precision::Ms => ColumnView::from_millis_timestamp(values),
        Precision::Us => ColumnView::from_micros_timestamp(values),
        Precision::Ns => ColumnView::from_nanos_timestamp(values),
    }
}

/// The values of `rows` of one column as a view of type `data_type`.
fn field_view(
    col: &Column,
    data_type: DataType,
    rows: &[u32],
    precision: Precision,
) -> Result<ColumnView, String> {
    let valid = |r: usize| col.is_valid(r);
    Ok(match (&col.values, data_type) {
        (ColumnValues::Bool(v), _) => ColumnView::Bool(
            rows.iter()
                .map(|&r| valid(r as usize).then(|| v[r as usize]))
                .collect::<BoolView>(),
        ),
        (ColumnValues::Float(v), DataType::Float) => ColumnView::Float(
            rows.iter()
                .map(|&r| finite(v[r as usize], valid(r as usize)).map(|x| x as f32))
                .collect::<FloatView>(),
        ),
        (ColumnValues::Float(v), _) => ColumnView::Double(
            rows.iter()
                .map(|&r| finite(v[r as usize], valid(r as usize)))
                .collect::<DoubleView>(),
        ),
        (ColumnValues::Str(v), DataType::NChar(_)) => ColumnView::from_nchar::<&str, _, _, _>(
            rows.iter()
                .map(|&r| valid(r as usize).then(|| v.get(r as usize))),
        ),
        (ColumnValues::Str(v), _) => ColumnView::from_varchar::<&str, _, _, _>(
            rows.iter()
                .map(|&r| valid(r as usize).then(|| v.get(r as usize))),
        ),
        (ColumnValues::Int(v), ty) => {
            let get = |r: &u32| valid(*r as usize).then(|| v[*r as usize]);
            match ty {
                DataType::TinyInt => ColumnView::TinyInt(
                    rows.iter()
                        .map(|r| get(r).map(|x| narrow::<i8>(x, ty)).transpose())
                        .collect::<Result<TinyIntView, _>>()?,
                ),
                DataType::SmallInt => ColumnView::SmallInt(
                    rows.iter()
                        .map(|r| get(r).map(|x| narrow::<i16>(x, ty)).transpose())
                        .collect::<Result<SmallIntView, _>>()?,
                ),
                DataType::Int => ColumnView::Int(
                    rows.iter()
                        .map(|r| get(r).map(|x| narrow::<i32>(x, ty)).transpose())
                        .collect::<Result<IntView, _>>()?,
                ),
                DataType::UBigInt => ColumnView::UBigInt(
                    rows.iter()
                        .map(|r| get(r).map(|x| narrow::<u64>(x, ty)).transpose())
                        .collect::<Result<UBigIntView, _>>()?,
                ),
                DataType::Timestamp => timestamp_opt_view(
                    rows.iter()
                        .map(|r| get(r).map(|ms| precision.units_of_ms(ms)))
                        .collect(),
                    precision,
                ),
                _ => ColumnView::BigInt(rows.iter().map(get).collect::<BigIntView>()),
            }
        }
    })
}

fn timestamp_opt_view(values: Vec<Option<i64>>, precision: Precision) -> ColumnView {
    match precision {
        Precision::Ms => ColumnView::from_millis_timestamp(values),
        Precision::Us => ColumnView::from_micros_timestamp(values),
        Precision::Ns => ColumnView::from_nanos_timestamp(values),
    }
}

fn finite(v: f64, valid: bool) -> Option<f64> {
    (valid && v.is_finite()).then_some(v)
}

fn narrow<T: TryFrom<i64>>(v: i64, ty: DataType) -> Result<T, String> {
    T::try_from(v).map_err(|_| format!("value {v} does not fit {ty}"))
}

/// The driver's type for a [`DataType`].
fn ty(data_type: DataType) -> Ty {
    match data_type {
        DataType::Bool => Ty::Bool,
        DataType::TinyInt => Ty::TinyInt,
        DataType::SmallInt => Ty::SmallInt,
        DataType::Int => Ty::Int,
        DataType::BigInt => Ty::BigInt,
        DataType::UBigInt => Ty::UBigInt,
        DataType::Float => Ty::Float,
        DataType::Double => Ty::Double,
        DataType::Varchar(_) => Ty::VarChar,
        DataType::NChar(_) => Ty::NChar,
        DataType::Timestamp => Ty::Timestamp,
    }
}

fn taos_precision(p: Precision) -> taos::Precision {
    match p {
        Precision::Ms => taos::Precision::Millisecond,
        Precision::Us => taos::Precision::Microsecond,
        Precision::Ns => taos::Precision::Nanosecond,
    }
}

/// A coerced tag value as the driver's value of a `data_type` tag.
fn tag_value(data_type: DataType, lit: TagLit<'_>, precision: Precision) -> Value {
    match (lit, data_type) {
        (TagLit::Null, t) => Value::Null(ty(t)),
        (TagLit::Bool(b), _) => Value::Bool(b),
        (TagLit::Int(i), DataType::TinyInt) => Value::TinyInt(i as i8),
        (TagLit::Int(i), DataType::SmallInt) => Value::SmallInt(i as i16),
        (TagLit::Int(i), DataType::Int) => Value::Int(i as i32),
        (TagLit::Int(i), DataType::UBigInt) => Value::UBigInt(i as u64),
        (TagLit::Int(i), _) => Value::BigInt(i),
        (TagLit::Float(f), DataType::Float) => Value::Float(f as f32),
        (TagLit::Float(f), _) => Value::Double(f),
        (TagLit::Str(s), DataType::NChar(_)) => Value::NChar(s.into_owned()),
        (TagLit::Str(s), _) => Value::VarChar(s.into_owned()),
        (TagLit::Ts(v), _) => Value::Timestamp(Timestamp::new(v, taos_precision(precision))),
    }
}

/// The tags bound for child table `child` of a device with tag values `tags`, in the
/// super table's tag order. Coercion is [`coerce_tag`]'s, so range checks (already done by
/// [`coerce_tag`]) make the narrowing casts exact.
pub(crate) fn tag_values(
    layout: &TableLayout,
    tags: &[TagValue],
    child: &str,
    precision: Precision,
) -> Result<Vec<Value>, String> {
    layout
        .tags
        .iter()
        .map(|t| match t.from {
            TagFrom::ChildName => Ok(match t.data_type {
                DataType::NChar(_) => Value::NChar(child.to_string()),
                _ => Value::VarChar(child.to_string()),
            }),
            TagFrom::Slot(slot) => {
                let v = tags.get(slot).unwrap_or(&TagValue::Null);
                coerce_tag(t.data_type, v, precision)
                    .map(|lit| tag_value(t.data_type, lit, precision))
                    .map_err(|e| format!("tag {:?} of {child:?}: {e}", t.name))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::TagCol;
    use taos::taos_query::common::BorrowedValue;
    use tsload_core::{FieldDef, StrValues};

    #[test]
    fn groups_rows_by_child_table_in_first_seen_order() {
        let mut g = ChildGroups::default();
        g.build(&[5, 3, 5, 9, 3, 5]);
        let got: Vec<(u32, Vec<u32>)> = g.iter().map(|(d, r)| (d, r.to_vec())).collect();
        assert_eq!(got, [(5, vec![0, 2, 5]), (3, vec![1, 4]), (9, vec![3])]);
        assert_eq!(g.len(), 3);
        // Reuse with another batch.
        g.build(&[1, 1]);
        let got: Vec<(u32, Vec<u32>)> = g.iter().map(|(d, r)| (d, r.to_vec())).collect();
        assert_eq!(got, [(1, vec![0, 1])]);
        g.build(&[]);
        assert_eq!(g.len(), 0);
    }

    fn layout(fields: &[DataType]) -> TableLayout {
        TableLayout {
            stable: "s".into(),
            name_slot: Some(0),
            tags: vec![
                TagCol {
                    name: "t0".into(),
                    data_type: DataType::Varchar(10),
                    from: TagFrom::Slot(1),
                },
                TagCol {
                    name: "t1".into(),
                    data_type: DataType::TinyInt,
                    from: TagFrom::Slot(2),
                },
                TagCol {
                    name: "t2".into(),
                    data_type: DataType::Double,
                    from: TagFrom::Slot(3),
                },
            ],
            fields: fields
                .iter()
                .enumerate()
                .map(|(i, t)| FieldDef {
                    name: format!("c{i}"),
                    data_type: *t,
                })
                .collect(),
        }
    }

    fn col(values: ColumnValues, valid: Vec<bool>) -> Column {
        Column { values, valid }
    }

    #[test]
    fn binds_columns_in_statement_order_for_one_child() {
        let l = layout(&[
            DataType::Varchar(10),
            DataType::Float,
            DataType::TinyInt,
            DataType::Timestamp,
            DataType::NChar(4),
            DataType::Bool,
        ]);
        let mut s = StrValues::default();
        for v in ["a", "b", "c"] {
            s.push(v);
        }
        let mut n = StrValues::default();
        for v in ["中", "文", "x"] {
            n.push(v);
        }
        let tb = TableBatch {
            device: vec![1, 2, 1],
            ts: vec![1_000_000, 2_000_000, 3_000_000],
            columns: vec![
                col(ColumnValues::Str(s), vec![]),
                col(ColumnValues::Float(vec![1.5, 2.5, f64::INFINITY]), vec![]),
                col(ColumnValues::Int(vec![1, 2, 3]), vec![true, true, false]),
                col(ColumnValues::Int(vec![10, 20, 30]), vec![]),
                col(ColumnValues::Str(n), vec![]),
                col(ColumnValues::Bool(vec![true, false, true]), vec![]),
            ],
        };
        let mut g = ChildGroups::default();
        g.build(&tb.device);
        let (device, rows) = g.iter().next().unwrap();
        assert_eq!((device, rows), (1, &[0u32, 2][..]));
        let views = column_views(&tb, &l, rows, Precision::Us).unwrap();
        let tys: Vec<Ty> = views.iter().map(ColumnView::as_ty).collect();
        assert_eq!(
            tys,
            [
                Ty::Timestamp,
                Ty::VarChar,
                Ty::Float,
                Ty::TinyInt,
                Ty::Timestamp,
                Ty::NChar,
                Ty::Bool
            ]
        );
        assert!(views.iter().all(|v| v.len() == 2));
        // Timestamps in the database precision (µs here).
        assert!(matches!(
            views[0].get(1),
            Some(BorrowedValue::Timestamp(t)) if t.as_raw_i64() == 3_000
        ));
        assert!(matches!(views[1].get(1), Some(BorrowedValue::VarChar("c"))));
        assert!(matches!(views[2].get(0), Some(BorrowedValue::Float(f)) if f == 1.5));
        // Infinity and an invalid value are bound as NULL.
        assert!(matches!(views[2].get(1), Some(BorrowedValue::Null(_))));
        assert!(matches!(views[3].get(0), Some(BorrowedValue::TinyInt(1))));
        assert!(matches!(views[3].get(1), Some(BorrowedValue::Null(_))));
        // A Timestamp column's ms values scaled to µs.
        assert!(matches!(
            views[4].get(1),
            Some(BorrowedValue::Timestamp(t)) if t.as_raw_i64() == 30_000
        ));
        assert!(matches!(views[6].get(1), Some(BorrowedValue::Bool(true))));
    }

    #[test]
    fn refuses_integers_out_of_range() {
        let l = layout(&[DataType::TinyInt]);
        let tb = TableBatch {
            device: vec![0],
            ts: vec![0],
            columns: vec![col(ColumnValues::Int(vec![300]), vec![])],
        };
        let e = column_views(&tb, &l, &[0], Precision::Ms).unwrap_err();
        assert!(
            e.contains("c0") && e.contains("300") && e.contains("tinyint"),
            "{e}"
        );
    }

    #[test]
    fn binds_doubles_and_big_ints() {
        let l = layout(&[DataType::Double, DataType::BigInt, DataType::UBigInt]);
        let tb = TableBatch {
            device: vec![0],
            ts: vec![-1],
            columns: vec![
                col(ColumnValues::Float(vec![0.25]), vec![]),
                col(ColumnValues::Int(vec![i64::MIN]), vec![]),
                col(ColumnValues::Int(vec![i64::MAX]), vec![]),
            ],
        };
        let v = column_views(&tb, &l, &[0], Precision::Ms).unwrap();
        // -1 ns floors to -1 ms.
        assert!(matches!(v[0].get(0), Some(BorrowedValue::Timestamp(t)) if t.as_raw_i64() == -1));
        assert!(matches!(v[1].get(0), Some(BorrowedValue::Double(f)) if f == 0.25));
        assert!(matches!(v[2].get(0), Some(BorrowedValue::BigInt(i64::MIN))));
        assert!(matches!(v[3].get(0), Some(BorrowedValue::UBigInt(u)) if u == i64::MAX as u64));
    }

    #[test]
    fn binds_tags_in_super_table_order() {
        let l = layout(&[DataType::Float]);
        let tags = [
            TagValue::Str("d1".into()),
            TagValue::Str("loc".into()),
            TagValue::Int(-3),
            TagValue::Float(f64::NAN),
        ];
        let v = tag_values(&l, &tags, "d1", Precision::Ms).unwrap();
        assert_eq!(
            v,
            [
                Value::VarChar("loc".into()),
                Value::TinyInt(-3),
                Value::Null(Ty::Double)
            ]
        );
        let bad = [TagValue::Null, TagValue::Null, TagValue::Int(1000)];
        let e = tag_values(&l, &bad, "d1", Precision::Ms).unwrap_err();
        assert!(e.contains("t1") && e.contains("d1"), "{e}");

        let mut named = l.clone();
        named.tags = vec![TagCol {
            name: "tname".into(),
            data_type: DataType::Varchar(5),
            from: TagFrom::ChildName,
        }];
        assert_eq!(
            tag_values(&named, &[], "d9", Precision::Ms).unwrap(),
            [Value::VarChar("d9".into())]
        );
        let ts = TagCol {
            name: "t".into(),
            data_type: DataType::Timestamp,
            from: TagFrom::Slot(0),
        };
        named.tags = vec![ts];
        assert_eq!(
            tag_values(&named, &[TagValue::Int(5)], "d9", Precision::Ns).unwrap(),
            [Value::Timestamp(Timestamp::Nanoseconds(5_000_000))]
        );
    }
}
