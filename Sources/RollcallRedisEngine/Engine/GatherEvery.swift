/// Starts `count` requests at once (`start(index, answer)`) and hands `done` every answer in
/// index order once all came in, or the first failure (answers after it are ignored). The
/// readers of every key group's bucket use it (`ClusterPresence.callEveryGroup`, the webhook
/// taker's streams), so that step 6 can route each group's request to its own master.
func gatherEvery<Value, Failure: Error>(_ count: Int, _ start: (Int, @escaping (Result<Value, Failure>) -> Void) -> Void,
                                        then done: @escaping (Result<[Value], Failure>) -> Void) {
    guard count > 0 else { return done(.success([])) }
    var answers = [Value?](repeating: nil, count: count)
    var remaining = count, failed = false
    for index in 0..<count {
        start(index) { result in
            guard !failed else { return }
            switch result {
            case .failure(let failure):
                failed = true
                done(.failure(failure))
            case .success(let value):
                answers[index] = value
                remaining -= 1
                if remaining == 0 { done(.success(answers.compactMap { $0 })) }
            }
        }
    }
}
