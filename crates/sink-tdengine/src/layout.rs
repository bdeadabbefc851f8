//! How a schema table becomes a TDengine super table: which tags are TDengine tags, where
//! each child table's name comes from, and the checks that keep names legal.

use tsload_core::{
    ColumnClash, DataType, ErrorKind, FieldDef, Schema, SinkError, TableSchema, TagValue,
    find_column_clash,
};

/// The tag whose value names the child table (the `custom` workload's slot 0). TDengine
/// reserves the name, so it is never a tag column itself.
pub(crate) const NAME_TAG: &str = "tbname";

/// A tag column holding the child table's name: added when a super table would otherwise
/// have no tag (TDengine requires one), and used instead of `tbname` in schemaless mode.
/// It is the example name of TDengine's `smlChildTableName` setting, so a server so
/// configured names schemaless child tables by it.
pub(crate) const NAME_COPY_TAG: &str = "tname";

/// The timestamp column every super table starts with.
pub(crate) const TS_COLUMN: &str = "ts";

/// TDengine's limits on names (bytes): tables 192, columns 64.
const MAX_TABLE_NAME: usize = 192;
const MAX_COLUMN_NAME: usize = 64;

/// Where a TDengine tag's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TagFrom {
    /// The device's tag slot.
    Slot(usize),
    /// The child table's name.
    ChildName,
}

/// One TDengine tag column of a super table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TagCol {
    pub name: String,
    pub data_type: DataType,
    pub from: TagFrom,
}

/// A schema table as a TDengine super table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableLayout {
    /// The super table's name (the schema table's).
    pub stable: String,
    /// Tag slot of `tbname`, when the table has it: child tables are named by its value;
    /// otherwise `{table}_{device}`.
    pub name_slot: Option<usize>,
    /// TDengine tags, in column order.
    pub tags: Vec<TagCol>,
    pub fields: Vec<FieldDef>,
}

impl TableLayout {
    /// The layout of `table`, or a [`ErrorKind::Schema`] error when a name would be illegal
    /// or ambiguous in TDengine.
    pub fn new(table: &TableSchema) -> Result<Self, SinkError> {
        let err =
            |m: String| SinkError::new(ErrorKind::Schema, format!("table {:?}: {m}", table.name));
        check_name(&table.name, MAX_TABLE_NAME)
            .map_err(|m| err(format!("super table name {m}")))?;
        if table.fields.is_empty() {
            return Err(err("has no field; a TDengine super table needs at least one column besides the timestamp".into()));
        }
        let name_tag = table.tags.iter().find(|t| t.name == NAME_TAG);
        let mut tags: Vec<TagCol> = table
            .tags
            .iter()
            .filter(|t| t.name != NAME_TAG)
            .map(|t| TagCol {
                name: t.name.clone(),
                data_type: t.data_type,
                from: TagFrom::Slot(t.slot),
            })
            .collect();
        if tags.is_empty() {
            let len = match name_tag.map(|t| t.data_type) {
                Some(DataType::Varchar(n) | DataType::NChar(n)) => n.max(1),
                _ => generated_name_len(&table.name),
            };
            tags.push(TagCol {
                name: NAME_COPY_TAG.to_string(),
                data_type: DataType::Varchar(len),
                from: TagFrom::ChildName,
            });
        }
        let layout = TableLayout {
            stable: table.name.clone(),
            name_slot: name_tag.map(|t| t.slot),
            tags,
            fields: table.fields.clone(),
        };
        let columns = || {
            layout
                .tags
                .iter()
                .map(|t| (t.name.as_str(), "tag"))
                .chain(layout.fields.iter().map(|f| (f.name.as_str(), "field")))
        };
        for (name, role) in columns() {
            check_name(name, MAX_COLUMN_NAME).map_err(|m| err(format!("{role} name {m}")))?;
        }
        match find_column_clash(columns(), &[TS_COLUMN, NAME_TAG], |n| {
            n.to_ascii_lowercase()
        }) {
            None => {}
            Some(ColumnClash::Reserved {
                name,
                role,
                reserved,
            }) => {
                return Err(err(format!(
                    "{role} {name:?} clashes with TDengine's {reserved:?} column"
                )));
            }
            Some(ColumnClash::Duplicate { name, role, first }) => {
                let what = ColumnClash::duplicate_words(role, first);
                return Err(err(format!("column {name:?} {what}")));
            }
        }
        Ok(layout)
    }

    /// The child table of `device`, whose tag values (every slot) are `tags`: the value of
    /// `tbname` when the table has it (and it is not empty), otherwise `{table}_{device}`.
    pub fn child_name(&self, device: u32, tags: &[TagValue]) -> String {
        if let Some(slot) = self.name_slot {
            match tags.get(slot) {
                Some(TagValue::Str(s)) if !s.is_empty() => return s.to_string(),
                Some(v @ (TagValue::Int(_) | TagValue::Float(_) | TagValue::Bool(_))) => {
                    return v.to_string();
                }
                _ => {}
            }
        }
        format!("{}_{device}", self.stable)
    }
}

/// Bytes of `{table}_{device}` at most.
fn generated_name_len(table: &str) -> u32 {
    (table.len() + 1 + 10) as u32
}

/// Fails when `name` is empty, longer than `max` bytes, or holds a backtick (names are
/// written between backticks and TDengine has no escape for one inside).
fn check_name(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".to_string());
    }
    if name.len() > max {
        return Err(format!(
            "{name:?} is {} bytes long; TDengine allows {max}",
            name.len()
        ));
    }
    if name.contains('`') {
        return Err(format!("{name:?} contains a backtick"));
    }
    Ok(())
}

/// Fails unless `name` can name a child table: 1 to 192 visible ASCII characters, no
/// backtick (names are quoted with them) and no `.` (it would read as `db.table`).
pub(crate) fn check_child_name(name: &str) -> Result<(), String> {
    check_name(name, MAX_TABLE_NAME)?;
    if let Some(c) = name.chars().find(|c| !c.is_ascii_graphic() || *c == '.') {
        return Err(format!(
            "child table name {name:?} contains {c:?}; TDengine allows visible ASCII \
             characters only (and this target no '.')"
        ));
    }
    Ok(())
}

/// The schema as schemaless writes see it: a `tbname` tag is renamed `tname` (TDengine
/// reserves `tbname`; schemaless names child tables itself). Unchanged otherwise.
pub(crate) fn schemaless_schema(schema: &Schema) -> Schema {
    let mut out = schema.clone();
    for table in &mut out.tables {
        let taken = table.tags.iter().any(|t| t.name == NAME_COPY_TAG);
        if taken {
            continue;
        }
        for tag in &mut table.tags {
            if tag.name == NAME_TAG {
                tag.name = NAME_COPY_TAG.to_string();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::sync::Arc;
    use tsload_core::{TagDef, TagSource};

    fn table(name: &str, tags: &[(&str, DataType)], fields: &[&str]) -> TableSchema {
        TableSchema {
            name: name.to_string(),
            tags: tags
                .iter()
                .enumerate()
                .map(|(slot, (n, t))| TagDef {
                    name: n.to_string(),
                    data_type: *t,
                    slot,
                })
                .collect(),
            fields: fields
                .iter()
                .map(|n| FieldDef {
                    name: n.to_string(),
                    data_type: DataType::Float,
                })
                .collect(),
        }
    }

    #[test]
    fn custom_tables_are_named_by_tbname_which_is_not_a_tag() {
        let t = table(
            "meters",
            &[
                ("tbname", DataType::Varchar(11)),
                ("t0", DataType::Varchar(10)),
            ],
            &["c0"],
        );
        let l = TableLayout::new(&t).unwrap();
        assert_eq!(l.name_slot, Some(0));
        assert_eq!(
            l.tags,
            [TagCol {
                name: "t0".into(),
                data_type: DataType::Varchar(10),
                from: TagFrom::Slot(1)
            }]
        );
        let tags = [
            TagValue::Str(Cow::Borrowed("d7")),
            TagValue::Str("x".into()),
        ];
        assert_eq!(l.child_name(7, &tags), "d7");
        // An empty or missing name falls back to the generated one.
        assert_eq!(l.child_name(7, &[TagValue::Null]), "meters_7");
        assert_eq!(l.child_name(7, &[]), "meters_7");
    }

    #[test]
    fn tables_without_tbname_use_table_and_device() {
        let t = table(
            "cpu",
            &[
                ("hostname", DataType::Varchar(32)),
                ("region", DataType::Varchar(32)),
            ],
            &["usage_user"],
        );
        let l = TableLayout::new(&t).unwrap();
        assert_eq!(l.name_slot, None);
        assert_eq!(l.tags.len(), 2);
        assert_eq!(l.tags[1].from, TagFrom::Slot(1));
        assert_eq!(l.child_name(42, &[]), "cpu_42");
    }

    #[test]
    fn a_table_without_other_tags_gets_the_name_as_tag() {
        let only_name = table("meters", &[("tbname", DataType::Varchar(11))], &["c0"]);
        let l = TableLayout::new(&only_name).unwrap();
        assert_eq!(
            l.tags,
            [TagCol {
                name: "tname".into(),
                data_type: DataType::Varchar(11),
                from: TagFrom::ChildName
            }]
        );
        let none = table("m", &[], &["c0"]);
        let l = TableLayout::new(&none).unwrap();
        assert_eq!(l.tags[0].data_type, DataType::Varchar(12));
        assert_eq!(l.tags[0].from, TagFrom::ChildName);
    }

    #[test]
    fn rejects_illegal_or_ambiguous_names() {
        let cases: [(TableSchema, &str); 7] = [
            (
                table("m", &[("host", DataType::Varchar(8))], &["Host"]),
                "both a tag and a field",
            ),
            (table("m", &[], &["c", "C"]), "twice among the fields"),
            (table("m", &[], &["TS"]), "\"ts\""),
            (table("m", &[], &["a`b"]), "backtick"),
            (table("m`", &[], &["a"]), "backtick"),
            (table("m", &[], &[]), "no field"),
            (table("m", &[], &[&"x".repeat(65)]), "65 bytes"),
        ];
        for (t, needle) in cases {
            let e = TableLayout::new(&t).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Schema);
            assert!(e.message.contains(needle), "{e}");
        }
    }

    #[test]
    fn child_names_must_be_plain() {
        assert!(check_child_name("d0").is_ok());
        assert!(check_child_name("host_1-a").is_ok());
        assert!(check_child_name("").is_err());
        assert!(check_child_name("a b").is_err());
        assert!(check_child_name("a.b").is_err());
        assert!(check_child_name("a`b").is_err());
        assert!(check_child_name("é").is_err());
        assert!(check_child_name(&"x".repeat(193)).is_err());
    }

    #[derive(Debug)]
    struct NoTags;
    impl TagSource for NoTags {
        fn device_tags(&self, _device: u32, out: &mut Vec<TagValue>) {
            out.clear();
        }
    }

    #[test]
    fn schemaless_renames_tbname() {
        let schema = Schema {
            tables: vec![table(
                "meters",
                &[
                    ("tbname", DataType::Varchar(11)),
                    ("t0", DataType::Varchar(10)),
                ],
                &["c0"],
            )],
            tag_slots: 2,
            device_count: 1,
            tags: Arc::new(NoTags),
        };
        let s = schemaless_schema(&schema);
        let names: Vec<_> = s.tables[0].tags.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["tname", "t0"]);
        assert_eq!(s.tables[0].tags[0].slot, 0);
    }
}
