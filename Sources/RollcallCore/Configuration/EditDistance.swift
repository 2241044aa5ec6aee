/// Levenshtein distance between two strings, over Unicode scalars: the fewest insertions,
/// deletions and substitutions that turn one into the other. Used to suggest the known key
/// nearest to a misspelt one.
func editDistance(_ a: String, _ b: String) -> Int {
    let source = Array(a.unicodeScalars), target = Array(b.unicodeScalars)
    if source.isEmpty { return target.count }
    var previous = Array(0...target.count)
    var current = previous
    for i in 1...source.count {
        current[0] = i
        for j in stride(from: 1, through: target.count, by: 1) {
            let substitution = previous[j - 1] + (source[i - 1] == target[j - 1] ? 0 : 1)
            current[j] = min(substitution, previous[j] + 1, current[j - 1] + 1)
        }
        swap(&previous, &current)
    }
    return previous[target.count]
}
