//! Reading the tree of a `runtime-report`: each row's full path and its
//! exclusive and inclusive times.

/// A row of a runtime-report tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The path from the root, names joined with `/`.
    pub path: String,
    /// Time (E), seconds.
    pub exclusive: f64,
    /// Time (I), seconds.
    pub inclusive: f64,
}

/// The rows of the runtime-report tree in `text`: the lines after the
/// `Path` header (which may follow other output on its line), two spaces
/// of indentation a level, the path then Time (E) and Time (I). A name
/// may hold spaces (Kokkos names its kernels so): it is the words before
/// the numbers that end the line (so its last word must not be a number).
pub fn rows(text: &str) -> Vec<Row> {
    columns(text)
        .into_iter()
        .map(|(path, numbers)| {
            let [exclusive, inclusive, ..] = numbers[..] else { panic!("not a report row: {path} {numbers:?}") };
            Row { path, exclusive, inclusive }
        })
        .collect()
}

/// Every row of the report tree in `text` (any tree report: runtime-report,
/// cuda-activity-report, ...) as its full path and the numbers that end its
/// line, read as [`rows`] reads them. A column left empty in a row (no GPU
/// time) is not among its numbers.
pub fn columns(text: &str) -> Vec<(String, Vec<f64>)> {
    let mut stack: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for line in text.lines().skip_while(|l| !l.contains("Path ")).skip(1).filter(|l| !l.trim().is_empty()) {
        let depth = (line.len() - line.trim_start().len()) / 2;
        let fields: Vec<&str> = line.split_whitespace().collect();
        let numbers = fields.iter().rev().take_while(|f| f.parse::<f64>().is_ok()).count();
        let (name, numbers) = fields.split_at(fields.len() - numbers.min(fields.len() - 1));
        let numbers = numbers.iter().map(|n| n.parse().unwrap_or_else(|_| panic!("not a number: {n:?} in {line:?}")));
        stack.truncate(depth);
        stack.push(name.join(" "));
        rows.push((stack.join("/"), numbers.collect()));
    }
    rows
}

/// The paths of `rows`, sorted.
pub fn paths(rows: &[Row]) -> Vec<&str> {
    let mut paths: Vec<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    paths.sort();
    paths
}

/// The row of `path`.
pub fn row<'a>(rows: &'a [Row], path: &str) -> &'a Row {
    rows.iter().find(|r| r.path == path).unwrap_or_else(|| panic!("no row {path} in {rows:#?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_full_paths() {
        let text = "test x ... Path     Time (E) Time (I) Time % (E)\nmain     0.5 1.5 10\n  foo    1.0 1.0 20\nw 0.1 0.1 1\n\n";
        let rows = rows(text);
        assert_eq!(paths(&rows), ["main", "main/foo", "w"]);
        assert_eq!(row(&rows, "main/foo").exclusive, 1.0);
        assert_eq!(row(&rows, "main").inclusive, 1.5);
    }

    #[test]
    fn columns_are_every_number_of_a_row() {
        let text = "Path Host Time GPU Time GPU %\nmain 0.5 0.25 50\n  init 0.1  0\n";
        assert_eq!(
            columns(text),
            [("main".to_string(), vec![0.5, 0.25, 50.0]), ("main/init".to_string(), vec![0.1, 0.0])]
        );
    }

    #[test]
    fn names_may_hold_spaces() {
        let text = "Path Time (E) Time (I)\nsolve 0.5 1.5\n  init 2 [a] 0.25 0.25\n";
        assert_eq!(row(&rows(text), "solve/init 2 [a]").inclusive, 0.25);
    }
}
