//! The `callgraph` collector's analysis: the call graph of the arc counts,
//! with each function's own calls and its inclusive calls, in the manner
//! of gprof (with counts of calls where gprof has time).
//!
//! A node is a function that was called, or a caller that was not
//! instrumented (the C library's `__libc_start_call_main` calling `main`,
//! say: known only by its arcs, with no calls of its own). Arcs from
//! several call sites of one caller to one callee are one edge.
//!
//! **Inclusive calls.** A function's inclusive figure is its own calls
//! plus the calls made beneath it, shared out along the arcs: each callee
//! passes its inclusive figure up to its callers in proportion to the
//! calls along each arc (gprof's propagation). For `a` calling `shared` 3
//! times and `b` calling it once, where `shared` calls `leaf` 8 times in
//! all, `shared`'s inclusive 4 + 8 = 12 goes 9 to `a` and 3 to `b`. The
//! figure is exact where each call of a function makes the same calls
//! beneath (always, for a function with one caller); otherwise it is the
//! estimate that gprof makes for time.
//!
//! **Cycles.** Functions that call each other, directly or through
//! others (mutual recursion), form a strongly connected component, which
//! counts as one node `<cycle N>`: its calls are its members' calls
//! together, its inclusive figure those plus the calls beneath it outside
//! the cycle, and only the calls from outside share it out to its callers
//! (so propagation ends and nothing is counted twice). A member's own
//! inclusive figure is its calls plus what its arcs leaving the cycle bring
//! up; the members' figures add up to the cycle's. A function calling
//! itself (plain recursion) is no cycle: its recursive calls are among its
//! calls, and only the calls from other functions share out its figure.
//!
//! **The tree.** For tree views (`cali-query ... format tree`,
//! json-split), each node (a cycle counting as one) has one place, under
//! the caller that calls it most (ties: the first by name); a cycle's
//! members sit under the cycle. A node's inclusive figure is its total
//! over all its callers, so where a function has several callers a
//! subtree's figures need not add up to its root's.

use crate::functions::{ArcTable, FunctionTable};
use std::collections::HashMap;
use std::sync::Arc;

/// A function, or a caller known only by its arcs.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub module: Arc<str>,
    /// Its calls (0 for a caller that was not instrumented).
    pub calls: u64,
    /// The component (cycle, or the node alone) it belongs to.
    pub component: usize,
    /// Its calls and the calls beneath it (see the module documentation).
    pub inclusive: f64,
}

/// The calls from one function to another, over all its call sites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub caller: usize,
    pub callee: usize,
    pub calls: u64,
}

/// A strongly connected component: a cycle, or one node alone.
#[derive(Debug, Clone)]
pub struct Component {
    /// Its nodes, by name.
    pub members: Vec<usize>,
    /// Its number as `<cycle N>`, when it has more than one member.
    pub cycle: Option<usize>,
    /// Its members' calls together.
    pub calls: u64,
    /// The calls into it from outside.
    pub entries: u64,
    pub inclusive: f64,
    /// The component it sits under in the tree (None for a root).
    pub parent: Option<usize>,
}

/// The call graph of a run.
#[derive(Debug, Clone, Default)]
pub struct CallGraph {
    pub nodes: Vec<Node>,
    /// Sorted by caller, then callee.
    pub edges: Vec<Edge>,
    /// The indices of `edges` sorted by callee, then caller.
    into: Vec<usize>,
    pub components: Vec<Component>,
}

impl CallGraph {
    /// The graph of the called functions and the arcs counted.
    pub fn build(functions: &FunctionTable, arcs: &ArcTable, counters: &[u64]) -> CallGraph {
        let mut graph = CallGraph::default();
        let mut of_function: HashMap<usize, usize> = HashMap::new();
        let mut of_caller: HashMap<(Arc<str>, Arc<str>), usize> = HashMap::new();
        let mut function_node = |graph: &mut CallGraph, id: usize| {
            *of_function.entry(id).or_insert_with(|| {
                let r = &functions.records[id];
                graph.add_node(r.name(), &r.module, functions.calls(id, counters))
            })
        };
        for id in (0..functions.records.len()).filter(|&id| functions.records[id].covered) {
            function_node(&mut graph, id);
        }
        let mut calls: HashMap<(usize, usize), u64> = HashMap::new();
        for (id, arc) in arcs.records.iter().enumerate() {
            let callee = function_node(&mut graph, arc.callee);
            let (caller_module, caller_name) = (arcs.caller_module(arc), arcs.caller(arc));
            let caller = match arc.caller_entry.and_then(|entry| functions.find(caller_module, entry)) {
                Some(f) => function_node(&mut graph, f),
                None => *of_caller
                    .entry((caller_module.clone(), caller_name.clone()))
                    .or_insert_with(|| graph.add_node(caller_name, caller_module, 0)),
            };
            *calls.entry((caller, callee)).or_default() += arcs.calls(id);
        }
        graph.edges = calls
            .into_iter()
            .filter(|&(_, n)| n > 0)
            .map(|((caller, callee), calls)| Edge { caller, callee, calls })
            .collect();
        graph.condense();
        graph
    }

    fn add_node(&mut self, name: &str, module: &Arc<str>, calls: u64) -> usize {
        let node = Node { name: name.to_string(), module: module.clone(), calls, component: 0, inclusive: 0.0 };
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// The edges into node `n`.
    pub fn callers(&self, n: usize) -> impl Iterator<Item = &Edge> {
        let first = self.into.partition_point(|&e| self.edges[e].callee < n);
        self.into[first..].iter().map(|&e| &self.edges[e]).take_while(move |e| e.callee == n)
    }

    /// The edges out of node `n`.
    pub fn callees(&self, n: usize) -> impl Iterator<Item = &Edge> {
        self.edges[self.first_callee(n)..].iter().take_while(move |e| e.caller == n)
    }

    /// The index in `edges` of node `n`'s first edge out (or of the next
    /// node's, if it has none).
    fn first_callee(&self, n: usize) -> usize {
        self.edges.partition_point(|e| e.caller < n)
    }

    /// A component's name: `<cycle N>`, or its node's name.
    pub fn label(&self, c: usize) -> String {
        let component = &self.components[c];
        match component.cycle {
            Some(n) => format!("<cycle {n}>"),
            None => self.nodes[component.members[0]].name.clone(),
        }
    }

    /// The components from a root of the tree down to `c`.
    pub fn path(&self, c: usize) -> Vec<usize> {
        let mut path = vec![c];
        while let Some(parent) = self.components[*path.last().expect("not empty")].parent {
            path.push(parent);
        }
        path.reverse();
        path
    }

    /// Finds the components, their calls and inclusive figures, the cycle
    /// numbers and the tree.
    fn condense(&mut self) {
        self.edges.sort_by_key(|e| (e.caller, e.callee));
        self.into = (0..self.edges.len()).collect();
        self.into.sort_by_key(|&e| (self.edges[e].callee, self.edges[e].caller));
        let order = self.strongly_connected();
        for (c, members) in order.iter().enumerate() {
            for &n in members {
                self.nodes[n].component = c;
            }
        }
        let component_of = |graph: &CallGraph, n: usize| graph.nodes[n].component;
        // Callees' components come first in `order`, so each share is
        // known when its callers need it.
        let mut components: Vec<Component> = Vec::with_capacity(order.len());
        for (c, mut members) in order.into_iter().enumerate() {
            members.sort_by(|&a, &b| self.nodes[a].name.cmp(&self.nodes[b].name));
            let calls = members.iter().map(|&n| self.nodes[n].calls).sum();
            let entries = members
                .iter()
                .flat_map(|&n| self.callers(n))
                .filter(|e| component_of(self, e.caller) != c)
                .map(|e| e.calls)
                .sum();
            for &n in &members {
                let beneath: f64 = self
                    .callees(n)
                    .filter(|e| component_of(self, e.callee) != c)
                    .map(|e| {
                        let below = &components[component_of(self, e.callee)];
                        e.calls as f64 * below.inclusive / below.entries as f64
                    })
                    .sum();
                self.nodes[n].inclusive = self.nodes[n].calls as f64 + beneath;
            }
            let inclusive = members.iter().map(|&n| self.nodes[n].inclusive).sum();
            components.push(Component { members, cycle: None, calls, entries, inclusive, parent: None });
        }
        self.components = components;
        self.number_cycles();
        self.span();
    }

    /// Numbers the cycles 1, 2, ... by inclusive figure, largest first
    /// (then by their first member's name).
    fn number_cycles(&mut self) {
        let mut cycles: Vec<usize> =
            (0..self.components.len()).filter(|&c| self.components[c].members.len() > 1).collect();
        let first_name = |c: usize| &self.nodes[self.components[c].members[0]].name;
        cycles.sort_by(|&a, &b| {
            let (x, y) = (&self.components[a], &self.components[b]);
            y.inclusive.total_cmp(&x.inclusive).then_with(|| first_name(a).cmp(first_name(b)))
        });
        for (n, c) in cycles.into_iter().enumerate() {
            self.components[c].cycle = Some(n + 1);
        }
    }

    /// Puts each component under the caller component that calls it most.
    fn span(&mut self) {
        for c in 0..self.components.len() {
            let mut from: HashMap<usize, u64> = HashMap::new();
            for &n in &self.components[c].members {
                for e in self.callers(n) {
                    let caller = self.nodes[e.caller].component;
                    if caller != c {
                        *from.entry(caller).or_default() += e.calls;
                    }
                }
            }
            let parent = from
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| self.label(b.0).cmp(&self.label(a.0))))
                .map(|(caller, _)| caller);
            self.components[c].parent = parent;
        }
    }

    /// Tarjan's algorithm, without recursion (call chains can be deep):
    /// the components, each after every component it calls.
    fn strongly_connected(&self) -> Vec<Vec<usize>> {
        const UNSEEN: usize = usize::MAX;
        let n = self.nodes.len();
        let mut index = vec![UNSEEN; n];
        let mut low = vec![0; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut components = Vec::new();
        let mut next = 0;
        for root in 0..n {
            if index[root] != UNSEEN {
                continue;
            }
            // (node, the index in `edges` of its next callee)
            let mut work = vec![(root, self.first_callee(root))];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (v, ref mut at)) = work.last_mut() {
                if let Some(e) = self.edges.get(*at).filter(|e| e.caller == v) {
                    *at += 1;
                    let w = e.callee;
                    if index[w] == UNSEEN {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        work.push((w, self.first_callee(w)));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut members = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        members.push(w);
                        if w == v {
                            break;
                        }
                    }
                    components.push(members);
                }
            }
        }
        components
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph of named nodes with their calls, and edges between them.
    fn graph(nodes: &[(&str, u64)], edges: &[(&str, &str, u64)]) -> CallGraph {
        let mut g = CallGraph::default();
        let module: Arc<str> = Arc::from("m");
        for &(name, calls) in nodes {
            g.add_node(name, &module, calls);
        }
        let ids: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.0, i)).collect();
        let id = |name: &str| ids[name];
        g.edges = edges.iter().map(|&(a, b, calls)| Edge { caller: id(a), callee: id(b), calls }).collect();
        g.condense();
        g
    }

    fn node<'a>(g: &'a CallGraph, name: &str) -> &'a Node {
        g.nodes.iter().find(|n| n.name == name).unwrap()
    }

    #[test]
    fn shares_a_callee_in_proportion_to_the_calls() {
        let g = graph(
            &[("main", 1), ("a", 3), ("b", 1), ("shared", 4), ("leaf", 8)],
            &[("main", "a", 3), ("main", "b", 1), ("a", "shared", 3), ("b", "shared", 1), ("shared", "leaf", 8)],
        );
        assert_eq!(node(&g, "leaf").inclusive, 8.0);
        assert_eq!(node(&g, "shared").inclusive, 12.0);
        assert_eq!(node(&g, "a").inclusive, 3.0 + 9.0);
        assert_eq!(node(&g, "b").inclusive, 1.0 + 3.0);
        assert_eq!(node(&g, "main").inclusive, 17.0, "every call of the program");
        let shared = node(&g, "shared").component;
        let path: Vec<String> = g.path(shared).into_iter().map(|c| g.label(c)).collect();
        assert_eq!(path, ["main", "a", "shared"], "under the caller that calls it most");
    }

    #[test]
    fn collapses_a_cycle_and_ignores_plain_recursion() {
        // main -> even <-> odd -> leaf; main -> fact -> fact
        let g = graph(
            &[("main", 1), ("even", 3), ("odd", 2), ("leaf", 2), ("fact", 5)],
            &[
                ("main", "even", 1),
                ("even", "odd", 2),
                ("odd", "even", 2),
                ("odd", "leaf", 2),
                ("main", "fact", 1),
                ("fact", "fact", 4),
            ],
        );
        let cycle = &g.components[node(&g, "even").component];
        assert_eq!(cycle.cycle, Some(1));
        assert_eq!(node(&g, "odd").component, node(&g, "even").component);
        assert_eq!((cycle.calls, cycle.entries, cycle.inclusive), (5, 1, 7.0));
        assert_eq!(node(&g, "even").inclusive, 3.0);
        assert_eq!(node(&g, "odd").inclusive, 4.0, "its calls and leaf's");
        let fact = &g.components[node(&g, "fact").component];
        assert_eq!((fact.cycle, fact.entries, fact.inclusive), (None, 1, 5.0));
        assert_eq!(node(&g, "main").inclusive, 1.0 + 7.0 + 5.0);
        let leaf = node(&g, "leaf").component;
        let path: Vec<String> = g.path(leaf).into_iter().map(|c| g.label(c)).collect();
        assert_eq!(path, ["main", "<cycle 1>", "leaf"]);
    }

    #[test]
    fn a_deep_chain_needs_no_deep_recursion() {
        let names: Vec<String> = (0..200_000).map(|i| format!("f{i}")).collect();
        let nodes: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 1)).collect();
        let edges: Vec<(&str, &str, u64)> = names.windows(2).map(|w| (w[0].as_str(), w[1].as_str(), 1)).collect();
        let g = graph(&nodes, &edges);
        assert_eq!(node(&g, "f0").inclusive, 200_000.0);
    }
}
