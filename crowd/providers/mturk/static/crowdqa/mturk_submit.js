// The answers are already stored by crowdqa; tell Mechanical Turk the assignment is finished.
document.getElementById("mturk-submit").submit();
